"""The fast formal checks (``formal.properties``, ``fast``): each property holds on its design,
and fails, with a counterexample trace, on its mutation (the whole controller's mutations in
the slow tier). ``make formal`` runs all of them."""

import pytest

from bench.simulators import BUILD
from formal.mutations import MUTATIONS
from formal.properties import PROPERTIES, check_mutation, check_property
from formal.sby import Check

FAST = [prop for prop in PROPERTIES if prop.fast]


def _where(prop, check, outcome):
    failed = ", ".join(outcome.failed) or "none reported"
    return (f"{prop.name} ({prop.design}, {prop.params.name}, {check.engine}, "
            f"{check.summary}): {outcome.status}; failed assertions: {failed}; "
            f"counterexample: {outcome.trace}; log: {outcome.log}")


@pytest.mark.parametrize("prop", FAST, ids=lambda prop: prop.name)
def test_property_holds(prop):
    outcome = check_property(prop, BUILD)
    assert outcome.status == "PASS", _where(prop, prop.check, outcome)


#: The designs whose fast properties' mutation checks belong to the slow tier: a mutant of the
#: whole controller takes a proof's time again to fail, and the quick tier keeps its proof.
SLOW_MUTATIONS = ("CxlMemController",)


@pytest.mark.parametrize("prop", [
    pytest.param(prop, id=f"{prop.name}--{prop.mutation.name}",
                 marks=[pytest.mark.slow] if prop.design in SLOW_MUTATIONS else [])
    for prop in FAST])
def test_property_fails_on_its_mutation(prop):
    outcome = check_mutation(prop, BUILD)
    assert outcome.status == "FAIL", _where(prop, prop.mutant, outcome)
    assert outcome.trace is not None and outcome.trace.exists(), \
        f"no counterexample trace: {_where(prop, prop.mutant, outcome)}"


def test_every_property_has_a_mutation_and_every_mutation_a_property():
    harnesses = {prop.harness.__name__ for prop in PROPERTIES}
    assert harnesses == set(MUTATIONS), \
        f"properties without a mutation: {sorted(harnesses - set(MUTATIONS))}; " \
        f"mutations without a property: {sorted(set(MUTATIONS) - harnesses)}"


def test_a_check_refuses_unknown_modes_engines_and_depths():
    with pytest.raises(ValueError, match=r"mode must be one of \('bmc', 'prove'\), not 'live'"):
        Check("live", 5)
    with pytest.raises(ValueError, match=r"depth must be a positive integer, not 0"):
        Check("bmc", 0)
    with pytest.raises(ValueError, match=r"engine must be one of \('smtbmc boolector',\), "
                                         r"not 'smtbmc z3'"):
        Check("bmc", 5, "smtbmc z3")
