"""What the Python SDK end-to-end scripts share: a result's text blocks, a check that stops the
script with its reason, and a line for each step that passed."""


def texts(result):
    return [block.text for block in result.content if block.type == "text"]


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def step(name):
    print(f"ok: {name}", flush=True)
