"""Results in the browser: the self-contained HTML report of a saved run or study (`report`),
the live tuning page (`serve`), and what they share (decimation for display, the page's data
encoding). plotly.js is vendored (web/vendor: its cartesian bundle, MIT licence)."""
