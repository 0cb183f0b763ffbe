"""What-if sweeps: many design points from one file, on Dask or serially, resumable.

Imported by: cli.
"""
from .runner import load_results, results_dataframe, run_dask, run_point, run_serial, run_sweep
from .spec import Sweep, load_sweep, point_id, point_values

__all__ = ["Sweep", "load_sweep", "point_id", "point_values", "run_sweep", "run_serial", "run_dask", "run_point",
           "load_results", "results_dataframe"]
