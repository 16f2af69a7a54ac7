"""Transports: thin translators between the wire and the core. No rules here."""
