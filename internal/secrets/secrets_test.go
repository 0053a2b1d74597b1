package secrets_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	secretmanager "cloud.google.com/go/secretmanager/apiv1"
	"cloud.google.com/go/secretmanager/apiv1/secretmanagerpb"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/egress-proxies/egress/internal/secrets"
)

// fakeSecretManager is a local gRPC Secret Manager: Google ships no
// emulator for it, so the real client is pointed at this.
type fakeSecretManager struct {
	secretmanagerpb.UnimplementedSecretManagerServiceServer
	versions map[string]string
	errs     map[string]error
	asked    []string
}

func (f *fakeSecretManager) AccessSecretVersion(_ context.Context, req *secretmanagerpb.AccessSecretVersionRequest) (*secretmanagerpb.AccessSecretVersionResponse, error) {
	f.asked = append(f.asked, req.GetName())
	if err, ok := f.errs[req.GetName()]; ok {
		return nil, err
	}
	v, ok := f.versions[req.GetName()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "Secret Version [%s] not found.", req.GetName())
	}
	return &secretmanagerpb.AccessSecretVersionResponse{Name: req.GetName(), Payload: &secretmanagerpb.SecretPayload{Data: []byte(v)}}, nil
}

func TestAccess(t *testing.T) {
	const (
		good     = "projects/demo-p/secrets/proxy-init/versions/3"
		denied   = "projects/demo-p/secrets/locked/versions/1"
		disabled = "projects/demo-p/secrets/old/versions/1"
		flaky    = "projects/demo-p/secrets/flaky/versions/1"
		missing  = "projects/demo-p/secrets/absent/versions/latest"
	)
	fake := &fakeSecretManager{
		versions: map[string]string{good: "#cloud-config\npackages: [tinyproxy]\n"},
		errs: map[string]error{
			denied:   status.Error(codes.PermissionDenied, "Permission 'secretmanager.versions.access' denied"),
			disabled: status.Error(codes.FailedPrecondition, "Secret Version is in DISABLED state"),
			flaky:    status.Error(codes.Unavailable, "connection reset"),
		},
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	secretmanagerpb.RegisterSecretManagerServiceServer(srv, fake)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)

	ctx := context.Background()
	client, err := secretmanager.NewClient(ctx,
		option.WithEndpoint(lis.Addr().String()),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	m := secrets.New(client)

	cases := map[string]struct {
		reason    string
		version   string
		want      string
		wantErr   bool
		permanent bool
	}{
		"Found":       {reason: "A readable version returns its payload.", version: good, want: "#cloud-config\npackages: [tinyproxy]\n"},
		"NotFound":    {wantErr: true, reason: "A missing version fails the proxy.", version: missing, permanent: true},
		"Denied":      {wantErr: true, reason: "A version the reconciler may not read fails the proxy.", version: denied, permanent: true},
		"Disabled":    {wantErr: true, reason: "A disabled version fails the proxy.", version: disabled, permanent: true},
		"Unavailable": {wantErr: true, reason: "An unavailable service is retried.", version: flaky, permanent: false},
		"NotAVersion": {wantErr: true, reason: "A name that is not a version is refused before any call.", version: "projects/demo-p/secrets/x", permanent: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			// The client retries Unavailable by itself until its deadline;
			// a short one keeps the transient case fast.
			ctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			got, err := m.Access(ctx, tc.version)
			var serr *secrets.Error
			switch {
			case !tc.wantErr && err != nil:
				t.Fatalf("%s: %v", tc.reason, err)
			case tc.wantErr && !errors.As(err, &serr):
				t.Fatalf("%s: error %v is no *secrets.Error", tc.reason, err)
			case tc.wantErr && serr.IsPermanent() != tc.permanent:
				t.Errorf("%s\npermanent = %v, want %v; error: %v", tc.reason, serr.IsPermanent(), tc.permanent, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\npayload (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
	// The malformed name never reached the service.
	for _, v := range fake.asked {
		if v == "projects/demo-p/secrets/x" {
			t.Errorf("the malformed name %q was sent to Secret Manager", v)
		}
	}
}
