"""The board: layout data (pure Python), geometry (numpy) and drawing (OpenCV) in submodules."""

from knockcam.board.layout import COLOR_SETS, KINDS, Board, Space, TokenSize, default_board_path, load_board

__all__ = ["Board", "Space", "TokenSize", "KINDS", "COLOR_SETS", "load_board", "default_board_path"]
