"""Structure-aware fuzzing of every decode path the proxy and the embedded controller run (`make fuzz`)."""
