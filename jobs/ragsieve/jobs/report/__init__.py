"""The run history as one self-contained HTML file (charts as inline SVG drawn by matplotlib).

Takes: the store's ``runs`` (history), alert states and ``[report]``/``[phoenix]`` settings.
Gives: ``report.html`` (``ragsieve report``; ``ragsieve up`` rewrites ``report.html_path``).
"""
