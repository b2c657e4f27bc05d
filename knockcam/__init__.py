"""knockcam: a camera scoring assistant for Monopoly Knockout.

Data flows one way: image -> calibration -> tokens -> positions -> payouts -> evidence.
"""

__version__ = "0.1.0"
