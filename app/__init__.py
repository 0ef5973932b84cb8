"""powercontext: versioned, citable, searchable memory for coding agents."""
