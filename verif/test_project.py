"""Project hygiene: the pins in pyproject.toml and requirements.lock agree."""

import re
import tomllib

from verif.simulators import REPO


def test_every_pyproject_pin_is_the_locked_version():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        wanted += extra
    locked = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)$",
                             (REPO / "requirements.lock").read_text(), flags=re.M))
    locked = {name.lower().replace("_", "-"): version for name, version in locked.items()}
    for requirement in wanted:
        name, version = requirement.split("==")
        assert locked.get(name.lower()) == version, \
            f"pyproject pins {name}=={version}, requirements.lock has {locked.get(name.lower())}"
