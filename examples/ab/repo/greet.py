"""Greetings for the bench-test command line."""


def greet(name="world"):
    return f"Hello, {name}!"
