"""The embedded reference controller: the default upstream of the proxy."""
