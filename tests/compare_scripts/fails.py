"""Fails part-way, as a user's script with a bug does."""

print("loading")
raise ValueError("column 'price' not found")
