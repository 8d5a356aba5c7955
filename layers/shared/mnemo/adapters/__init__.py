"""Adapters: the implementations of the ports in ``mnemo.ports``, one module per store and provider."""
