"""Model API tool formats."""
