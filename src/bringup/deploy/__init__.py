"""Ship a proven configuration: launch script, systemd unit, Kubernetes, Compose.

``resolve_trial(store, ref)`` picks the trial, ``deployment_from(run, trial)`` reads what
to run, ``write_deployment(dep, target, out_dir)`` writes the files. Secrets are
referenced by environment variable or Secret name, never written in clear.
"""

from bringup.deploy.target import Deployment, deployment_from, resolve_trial, start_budget
from bringup.deploy.writers import TARGETS, DeployOptions, Target, render, write_deployment
from bringup.secrets import is_secret_name, redact_argv, redact_env, redact_text

__all__ = [
    "TARGETS",
    "DeployOptions",
    "Deployment",
    "Target",
    "deployment_from",
    "is_secret_name",
    "redact_argv",
    "redact_env",
    "redact_text",
    "render",
    "resolve_trial",
    "start_budget",
    "write_deployment",
]
