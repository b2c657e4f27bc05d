"""``knockcam train``'s argument checks: one clear line and exit code 2 before anything is rendered."""

import pytest

from knockcam.cli import main


@pytest.mark.parametrize("flags", [["--fallen", "--refine"], ["--verify", "--refine"], ["--fallen", "--verify"],
                                   ["--fallen", "--fallen-base"], ["--fallen", "--fallen-pair"],
                                   ["--fallen-base", "--fallen-base-pair"], ["--refine", "--refine-alone"],
                                   ["--verify", "--verify-alone"], ["--verify-alone", "--cover"]])
def test_two_patch_networks_at_once_are_refused(flags, capfd):
    assert main(["train", *flags]) == 2
    out, err = capfd.readouterr()
    assert ("--fallen, --fallen-pair, --verify, --verify-alone, --refine, --refine-alone, --fallen-base, "
            "--fallen-base-pair and --cover train different networks") in err and err.count("\n") == 1 and not out


@pytest.mark.parametrize("network", ["--refine", "--refine-alone", "--verify-alone", "--fallen-base", "--fallen-pair",
                                     "--fallen-base-pair", "--cover"])
def test_too_few_scenes_are_refused(network, capfd):
    assert main(["train", network, "--scenes", "3"]) == 2
    assert "--scenes must be at least 10, not 3" in capfd.readouterr().err
