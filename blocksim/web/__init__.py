"""Results in the browser: the self-contained HTML report of a saved run (`report`), the live
tuning page (`serve`), and what both share (decimation for display, the page's data encoding).
plotly.js comes from the `web` extra (pip install -e '.[web]')."""
