package gcp

import (
	"context"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/egress-proxies/egress/internal/provider"
)

// consoleBytes is how much of the end of a VM's serial console Console
// reads: enough for the last lines of a failed boot.
const consoleBytes = 8 << 10

// Console returns the end of the VM's serial console (port 1), where the
// guest agent copies the startup script's output.
func (p *Provider) Console(ctx context.Context, providerID string) (string, error) {
	id, err := parseID(providerID)
	if err != nil {
		return "", err
	}
	if id.address {
		return "", provider.NewError(provider.KindPermanent, "console", providerID, provider.ErrNoConsole)
	}
	out, err := p.c.Instances.GetSerialPortOutput(ctx, &computepb.GetSerialPortOutputInstanceRequest{
		Project: id.project, Zone: id.scope, Instance: id.name, Port: proto.Int32(1), Start: proto.Int64(-consoleBytes),
	})
	if err != nil {
		return "", p.wrap("console", providerID, err)
	}
	return out.GetContents(), nil
}
