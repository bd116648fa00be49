"""Read bench-test's settings file: one KEY=VALUE per line."""


def load(path):
    settings = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            key, value = line.strip().split("=", 1)
            settings[key.strip()] = value.strip()
    return settings
