"""The portable core ("NCLib"): fixed-width kernels and the ufuncs built on them."""
