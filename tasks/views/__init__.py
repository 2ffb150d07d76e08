"""Results as people read them: their order, the one-line comparison and diagnosis, display rows, the drift
headline and the attribution figures."""
