"""The package version, written in one place.

pyproject.toml reads it from here when a wheel is built, the face re-exports it as
``mcpserve.__version__``, and modules inside the package import it from here: importing the
face from inside would tie every layer to everything the face loads.
"""

__version__ = "0.1.0"
