"""Synthetic scenes: photos and videos of the board with exact ground truth, for training and tests.

camera (pinhole + pose + lens), art (printed board), tokens (3-D pieces), occluders, scene
(composition + truth), video (30 fps clips with events) and yolo (detector dataset writer).
"""
