"""KnockcamError: one line, what went wrong apart from what to do."""

import numpy as np
import pytest

from knockcam.board.layout import load_board
from knockcam.calibrate.auto import calibrate_auto
from knockcam.errors import KnockcamError


def test_the_message_joins_the_reason_and_what_to_do():
    exc = KnockcamError("board not found", "give --corners")
    assert str(exc) == "board not found: give --corners"
    assert (exc.reason, exc.what_to_do) == ("board not found", "give --corners")


def test_a_message_given_whole_is_its_own_reason_even_with_a_colon_inside():
    exc = KnockcamError("the points do not form a board: no homography")
    assert exc.reason == str(exc) and exc.what_to_do == ""


def test_board_not_found_says_what_to_do_apart():
    """Live mode tells the reason alone (it takes no --corners); knockcam score tells both."""
    with pytest.raises(KnockcamError) as err:
        calibrate_auto(np.full((360, 640, 3), 90, np.uint8), load_board())
    assert err.value.reason == "board not found" and "--corners" in err.value.what_to_do


@pytest.mark.parametrize("argv, says", [
    (["score"], "knockcam score: error: the following arguments are required: IMAGE|DIR (see 'knockcam score --help')"),
    (["live", "--camera", "a"], "knockcam live: error: argument --camera: invalid int value: 'a'"),
    (["nosuchverb"], "knockcam: error: argument VERB: invalid choice: 'nosuchverb'"),
])
def test_a_command_line_argparse_refuses_is_one_line_too(capsys, argv, says):
    from knockcam.cli import main

    with pytest.raises(SystemExit) as caught:
        main(argv)
    err = capsys.readouterr().err
    assert caught.value.code == 2 and err.startswith(says) and err.count("\n") == 1 and "usage" not in err
