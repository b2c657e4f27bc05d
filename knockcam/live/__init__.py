"""Game night: follow a whole game from an overhead camera (``knockcam live``).

frames (camera / video / frame-list sources, disconnect and freeze detection) -> motion (gate: wait
while things move) -> vision (detect and assign on still frames) -> tracker (the game: turns, knocks,
jail, Chance, Railroad, scoring with knockcam.rules) -> log (append-only JSON lines, resume, replay);
prompts (terminal or scripted questions), display (terminal scoreboard, optional overlay window),
session (the loop), compose (synthetic game videos), bench (the loop's speed).
"""
