"""Operating profiles: routes by pattern and phase, and errors that name file, line and fix."""

import tomllib

import pytest

from bench.simulators import REPO
from runtime.profile import HEALTH_DEFAULTS, ProfileError, load_profile, parse_profile
from runtime.routes import FP32, Route

GOOD = """\
[phases]
fp32_warmup_steps = 5

[[route]]
pattern = "head.*"
route = "fp32"

[[route]]
pattern = "*.weight"
route = "gternary"
threshold = 2
start_step = 8

[[route]]
pattern = "*"
route = "gbinary"
momentum = 0.5
"""


def test_first_matching_rule_wins_and_phases_delay_low_bit_routes():
    profile = parse_profile(GOOD, "good.toml")
    assert profile.route_for("head.weight") == FP32, \
        f"head.weight on {profile.route_for('head.weight')}"
    assert profile.route_for("body.0.weight") == Route("gternary", 2), \
        f"body.0.weight on {profile.route_for('body.0.weight')}"
    assert profile.route_for("body.0.bias") == Route("gbinary", momentum=0.5), \
        f"body.0.bias on {profile.route_for('body.0.bias')}"
    assert profile.start_step("body.0.weight") == 8, "the rule's start_step"
    assert profile.start_step("body.0.bias") == 5, "the global FP32 warm-up"
    assert profile.health.loss_window == HEALTH_DEFAULTS["loss_window"], \
        f"loss_window {profile.health.loss_window}, not the default"


def test_unmatched_parameters_stay_on_fp32():
    profile = parse_profile('[[route]]\npattern = "a.*"\nroute = "gbinary"\n')
    assert profile.route_for("b.weight") == FP32, \
        f"unmatched b.weight on {profile.route_for('b.weight')}"


def test_the_example_profile_loads_and_repeats_no_default():
    path = REPO / "runtime" / "profiles" / "example.toml"
    profile = load_profile(path)
    health = tomllib.loads(path.read_text()).get("health", {})
    repeated = {k: v for k, v in health.items() if HEALTH_DEFAULTS.get(k) == v}
    assert not repeated, f"{path.name} repeats HEALTH_DEFAULTS: {repeated}"
    assert profile.route_for("head.weight") == FP32, \
        f"example: head.weight on {profile.route_for('head.weight')}"
    assert profile.route_for("body.0.weight").kind == "gternary", \
        f"example: body.0.weight on {profile.route_for('body.0.weight')}"


@pytest.mark.parametrize("text, line, problem, fix", [
    (GOOD.replace('threshold = 2', 'threshold = 0'), 11,
     "gternary rule 2 has threshold 0", "give the gate threshold T"),
    (GOOD.replace('route = "gbinary"', 'route = "gbinray"'), 16,
     "rule 3 has route 'gbinray'", 'route = "fp32", "gbinary" or "gternary"'),
    (GOOD.replace('route = "fp32"', 'route = "fp32"\nthreshold = 1'), 7,
     "fp32 rule 1 has a threshold", "remove it"),
    (GOOD.replace('pattern = "*"\n', 'patern = "*"\n'), 15,
     "unknown key 'patern' in rule 3", "use momentum, pattern"),
    (GOOD.replace("momentum = 0.5", "momentum = 1.0"), 17,
     "momentum is 1.0", "give a number from 0 (none) to below 1"),
    (GOOD.replace("momentum = 0.5", "error_feedback = true"), 17,
     "error_feedback is no longer a setting", "remove it: each worker's kept error"),
    (GOOD.replace('route = "fp32"', 'route = "fp32"\nmomentum = 0.9'), 7,
     "fp32 rule 1 has a momentum", "remove it: an FP32 parameter's momentum is the optimizer's"),
    (GOOD + "\n[health]\nsign_readmit_min = 0.5\n", 20,
     "sign_readmit_min = 0.5 and sign_agreement_min = 0.55 give no hysteresis",
     "choose values with 0 < sign_agreement_min <= sign_readmit_min"),
    (GOOD + "\n[health]\ncooldown_steps = 2.5\n", 20,
     "cooldown_steps is 2.5", "give a whole number, 1 or more"),
    (GOOD.replace("fp32_warmup_steps = 5", "fp32_warmup_steps = -1"), 2,
     "fp32_warmup_steps is -1", "give a whole number of steps"),
    (GOOD.replace("[[route]]\npattern = \"head.*\"", "[[route]\npattern = \"head.*\""), 4,
     "not TOML", "correct the TOML syntax"),
])
def test_errors_name_the_file_the_line_and_the_fix(text, line, problem, fix):
    with pytest.raises(ProfileError) as error:
        parse_profile(text, "p.toml")
    message = str(error.value)
    assert error.value.line == line, f"{message}: line {error.value.line}, wanted {line}"
    assert message.startswith(f"p.toml:{line}: "), message
    assert problem in message and f"fix: {fix}" in message, message


def test_a_missing_profile_is_a_profile_error(tmp_path):
    missing = tmp_path / "nowhere.toml"
    with pytest.raises(ProfileError) as error:
        load_profile(missing)
    message = str(error.value)
    assert message.startswith(f"{missing}: cannot read it") and "fix: give the path" in message, \
        message
