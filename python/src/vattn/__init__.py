"""vattn case files from Python: read, validate and write the HDF5 schema of docs/case-format.md."""

from .bf16 import bf16_to_float32, bf16_view, float32_to_bf16
from .casefile import Case, CaseFile, CaseFileError, Header, Output, read, write
from .recipe import RecipeError
from .recipe import mismatch as recipe_mismatch
from .recipe import parse as parse_recipe
from .validate import validate

__all__ = ["Case", "CaseFile", "CaseFileError", "Header", "Output", "read", "write", "validate",
           "bf16_to_float32", "float32_to_bf16", "bf16_view", "parse_recipe", "recipe_mismatch", "RecipeError"]
__version__ = "0.1.0"
# SPDX-License-Identifier: Apache-2.0
