"""Colours shared by the HTML and plot views: one per bottleneck (a unit or DRAM)."""

COLORS = {
    "dram": "#d62728",
    "tensor": "#1f77b4",
    "fma": "#2ca02c",
    "sfu": "#9467bd",
    "fp64": "#8c564b",
    "int": "#e377c2",
    "latency": "#ff7f0e",  # a launch floor or a critical path of dependent steps
    "none": "#7f7f7f",
}
