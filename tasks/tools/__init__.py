"""Small tools every part uses: files written whole and private, text made safe for a terminal, the one SVG
writer."""
