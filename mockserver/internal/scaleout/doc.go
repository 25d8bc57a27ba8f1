// Package scaleout tests the documented way past one machine
// (docs/mock/scale-out.md): several dify-mock replicas behind HAProxy with
// docs/mock/haproxy.cfg, every end user kept on one replica by hashing on
// the request's `user`. The package has no code of its own; its test starts
// three replicas and HAProxy on loopback (skipped, with the reason, where no
// haproxy binary is found: scripts/ensure-haproxy.sh installs Debian's).
package scaleout
