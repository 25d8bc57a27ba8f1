#!/usr/bin/env bash
# demo.sh — the one-command main job (`make demo`).
#
# Placeholder until the quickstart lands. The finished script builds the
# provider and dify-mock, starts the mock with its built-in cassettes on a free
# loopback port, points a throwaway Terraform CLI config (dev_overrides, in a
# temp dir) at the built provider, runs `terraform apply` on
# examples/quickstart/, prints the outputs, destroys, and stops the mock.
set -euo pipefail
cat <<'MSG'
terraform-provider-dify demo — coming soon.

`make demo` will:
  1. build the provider and dify-mock (make build);
  2. find or build a Terraform CLI >= 1.5 (scripts/ensure-terraform.sh);
  3. start dify-mock with its built-in cassettes on a free 127.0.0.1 port;
  4. run `terraform apply` on examples/quickstart/ against it through a
     temporary dev_overrides CLI config (your ~/.terraformrc is not touched);
  5. print the answer and the agent's thoughts, destroy, and stop the mock.

Until then, `make test` runs every test.
MSG
