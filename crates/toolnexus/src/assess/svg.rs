//! SVG charts and the HTML page.
