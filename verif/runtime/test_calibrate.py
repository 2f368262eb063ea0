"""Calibration in one process (gloo, one worker): scores per parameter, a proposed profile that
parses and keeps the low-scoring parameters on FP32, and training that stays on FP32."""


import torch

from bench.runtime import bind_golden
from runtime.calibrate import Calibrator
from runtime.events import EventLog
from runtime.profile import parse_profile
from runtime.reducers import DeviceModelReducer
from spec.params import ControllerParams, DatapathParams

PARAMS = ControllerParams(DatapathParams(line_bits=512, counter_width=3), regions=4,
                          address_bits=24)
BASE = """\
[phases]
fp32_warmup_steps = 3
[[route]]
pattern = "*"
route = "gbinary"
"""
CLASSES, STEPS = 200, 4



def _calibrate():
    torch.manual_seed(11)
    model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.Tanh(),
                                torch.nn.Linear(32, CLASSES))
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    profile, events = parse_profile(BASE.replace("fp32_warmup_steps = 3",
                                                 "fp32_warmup_steps = 0")), EventLog()
    binding, device = bind_golden(model, profile, PARAMS, 1, events)
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    calibrator = Calibrator(binding, parse_profile(BASE), DeviceModelReducer(device), events)
    calibrator.trace = []
    calibrator.register(ddp)
    data = torch.Generator().manual_seed(12)
    for _ in range(STEPS):
        x = torch.randn(8, 32, generator=data)
        y = torch.randint(0, CLASSES, (8,), generator=data)
        ddp.zero_grad()
        torch.nn.functional.cross_entropy(ddp(x), y).backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= 0.1 * p.grad
    return calibrator, model, before


def test_calibration_scores_every_low_bit_parameter_on_fp32(one_worker):
    calibrator, model, before = _calibrate()
    scores = calibrator.scores()
    assert set(scores) == {"0.weight", "0.bias", "2.weight", "2.bias"}, scores
    assert all(steps == STEPS for *_, steps in scores.values()), scores
    assert {route for _, _, route in calibrator.trace} == {"fp32"}, "calibration left FP32"


def test_a_many_class_head_scores_below_the_body(one_worker):
    """Eight samples touch at most eight of 200 classes: the head's gradient is concentrated
    in a few rows, which a sign with one scale per tensor renders poorly."""
    calibrator, *_ = _calibrate()
    scores = calibrator.scores()
    head, body = scores["2.weight"][0], scores["0.weight"][0]
    assert head < body, f"cosine of the head {head:.3f}, of the body {body:.3f}"


def test_the_proposed_profile_keeps_low_scores_on_fp32(one_worker):
    calibrator, *_ = _calibrate()
    scores = calibrator.scores()
    cut = (scores["2.weight"][0] + scores["0.weight"][0]) / 2
    text = calibrator.propose(min_cosine=cut)
    proposed = parse_profile(text, "proposed.toml")
    for name, (cosine, *_) in scores.items():
        want = "fp32" if cosine < cut else "gbinary"
        assert proposed.route_for(name).kind == want, \
            f"{name}: cosine {cosine:.3f}, cut {cut:.3f}, proposed {proposed.route_for(name)}"
    assert proposed.fp32_warmup_steps == 3 and proposed.health == calibrator.profile.health
