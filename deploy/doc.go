// Package deploy holds Trove's deployment files, checked by its tests:
// the Helm chart (helm/trove; its Kubernetes types are checked by the
// separate module helm/test), the compose file (compose.yaml) and the
// systemd unit (trove.service). It has no Go code of its own; see
// docs/install.md.
package deploy
