"""Foundations every layer may use: project files, caches, locks, loopback serving, text."""
