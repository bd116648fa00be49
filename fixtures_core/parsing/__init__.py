"""From Markdown fixture files to a validated matrix of row specs: parse, read config, template, select."""
