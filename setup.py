"""What goes into the wheel beside the code (pyproject.toml has the rest): the repository keeps the shipped models and
the assets at its top, `models/` and `assets/`; the wheel carries them inside the package, as `dasher_rnn/models` and
`dasher_rnn/assets`, where `dasher_rnn/paths.py` finds them in an install. The training checkpoints under
`models/checkpoints/` stay out of it. tests/test_install.py builds the wheel and checks both."""

from setuptools import find_packages, setup

DATA = {"dasher_rnn.models": "models", "dasher_rnn.assets": "assets"}

setup(
    packages=find_packages(include=["dasher_rnn", "dasher_rnn.*"]) + list(DATA),
    package_dir=DATA,
    package_data={"dasher_rnn.models": ["**/*"], "dasher_rnn.assets": ["**/*"]},
    exclude_package_data={"dasher_rnn.models": ["checkpoints/**/*"]},
)
