// Package helmtest checks Trove's Helm chart (../trove) against the
// Kubernetes API types: it runs helm lint, renders the chart with helm
// template (default and HA values) and decodes every rendered document
// strictly (unknown and duplicate fields are errors) into k8s.io/api's
// types. It is a module of its own so that k8s.io/api and
// k8s.io/apimachinery stay out of Trove's go.mod; scripts/test.sh runs it
// with TROVE_TEST_HELM from scripts/testenv/helm.sh.
package helmtest
