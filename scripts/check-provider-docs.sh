#!/usr/bin/env bash
# Checks that terraform-provider-trove/docs is what tfplugindocs generates
# from the provider's schema descriptions and terraform-provider-trove/examples,
# and that the examples are formatted. With --update it rewrites docs/
# instead (what `go generate ./terraform-provider-trove` runs).
#
# tfplugindocs is a tool dependency of the module (the tool directive in
# go.mod, its version pinned by go.sum), run with `go tool tfplugindocs`.
# Nothing else is downloaded: the provider's schema is read with the
# terraform on the PATH (built provider, `terraform init -plugin-dir`,
# `terraform providers schema -json`)
# and handed to tfplugindocs with --providers-schema, which then neither
# builds the provider nor looks for (or downloads) a terraform of its own.
set -euo pipefail
cd "$(dirname "$0")/.."

provider_dir=terraform-provider-trove

fail() {
	echo "scripts/check-provider-docs.sh: $*" >&2
	exit 1
}

update=false
case "${1:-}" in
"") ;;
--update) update=true ;;
*) fail "usage: scripts/check-provider-docs.sh [--update]" ;;
esac

command -v go >/dev/null 2>&1 || fail "go is not on the PATH"
command -v terraform >/dev/null 2>&1 ||
	fail "terraform is not on the PATH: it reads the provider's schema for the docs; install terraform 1.x and run again"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# terraform with a controlled environment: no CLI configuration, plugin
# cache or checkpoint calls of the caller's, and no TROVE_* defaults that
# could reach the provider.
: >"$tmp/terraform.rc"
tf() {
	env -u TF_PLUGIN_CACHE_DIR -u TF_CLI_ARGS -u TROVE_ADDR -u TROVE_TOKEN HOME="$tmp" TF_CLI_CONFIG_FILE="$tmp/terraform.rc" \
		CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1 terraform "$@"
}

unformatted=$(tf fmt -list=true -recursive "$provider_dir/examples") ||
	fail "terraform fmt failed on $provider_dir/examples"
if [ -n "$unformatted" ]; then
	echo "$unformatted" >&2
	fail "these examples are not formatted; run: terraform fmt -recursive $provider_dir/examples"
fi

# The provider's schema, as Terraform sees it. The source address is a
# local one; tfplugindocs finds the schema under the short name "trove".
source_addr=trove.test/trove/trove
platform="$(go env GOOS)_$(go env GOARCH)"
plugin_dir="$tmp/plugins/$source_addr/0.0.1/$platform"
mkdir -p "$plugin_dir" "$tmp/schema"
go build -o "$plugin_dir/terraform-provider-trove" "./$provider_dir"
cat >"$tmp/schema/main.tf" <<EOF
terraform {
  required_providers {
    trove = {
      source = "$source_addr"
    }
  }
}
EOF
tf -chdir="$tmp/schema" init -input=false -no-color -plugin-dir="$tmp/plugins" >"$tmp/init.log" 2>&1 || {
	cat "$tmp/init.log" >&2
	fail "terraform init of the freshly built provider failed"
}
tf -chdir="$tmp/schema" providers schema -json >"$tmp/schema.raw.json"
sed "s#\"$source_addr\"#\"trove\"#" "$tmp/schema.raw.json" >"$tmp/schema.json"

# tfplugindocs reads examples/ (and templates/, if any) below
# --provider-dir and writes docs/ there: give it a copy.
work="$tmp/provider"
mkdir -p "$work"
cp -R "$provider_dir/examples" "$work/"
if [ -d "$provider_dir/templates" ]; then
	cp -R "$provider_dir/templates" "$work/"
fi
# Run from the module root, where go.mod names the tool and its version.
go tool tfplugindocs generate --provider-name trove --providers-schema "$tmp/schema.json" \
	--provider-dir "$work" >"$tmp/tfplugindocs.log" 2>&1 || {
	cat "$tmp/tfplugindocs.log" >&2
	fail "tfplugindocs generate failed"
}

if $update; then
	rm -rf "$provider_dir/docs"
	cp -R "$work/docs" "$provider_dir/docs"
	echo "regenerated $provider_dir/docs"
	exit 0
fi
if ! diff -ru "$provider_dir/docs" "$work/docs" >"$tmp/docs.diff" 2>&1; then
	cat "$tmp/docs.diff" >&2
	fail "$provider_dir/docs differs from the generated documentation (above); regenerate it with: go generate ./$provider_dir"
fi
echo "$provider_dir/docs is up to date"
