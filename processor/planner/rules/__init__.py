"""Planner rules: pure functions over a logical sink tree, applied in ``RULES`` order.

Rules that preserve results rewrite the tree; rules that may reject a query raise PlanError.
"""
