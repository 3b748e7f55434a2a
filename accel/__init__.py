"""accel: end-to-end tabular data science on NVIDIA GPUs with RAPIDS, measured against a fair CPU baseline."""

__version__ = "0.1.0"
