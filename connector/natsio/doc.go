// Package natsio is a NATS JetStream source and sink (work in progress).
package natsio

import (
	_ "github.com/nats-io/nats-server/v2/server"
	_ "github.com/nats-io/nats.go"
	_ "github.com/nats-io/nats.go/jetstream"
)
