package aws

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/aws/ec2fake"
	"github.com/egress-proxies/egress/internal/provider/providertest"
)

// requestN is the i-th of distinct proxies in us-east-1 (t3 types, two
// vCPUs each).
func requestN(i int) provider.CreateRequest { return providertest.Distinct(request(), i) }

// TestQuota: a launch past the region's vCPU limit is EC2's
// VcpuLimitExceeded, KindQuota; a terminated instance's vCPUs are room
// again (providertest.RunQuota).
func TestQuota(t *testing.T) {
	providertest.RunQuota(t, func(t *testing.T, room int) providertest.QuotaTarget {
		e := newEnv(t)
		e.fake.SetQuotas(ec2fake.Quotas{VCPUs: 2 * room})
		return providertest.QuotaTarget{Provider: e.p, Request: requestN, Settle: e.fake.Settle, Quota: "VcpuLimitExceeded"}
	})
}

// TestQuotaKinds: each of EC2's quota errors, driven through the SDK
// against the fake, is KindQuota naming EC2's code, from the call that
// met it: RunInstances for instances and vCPUs, AllocateAddress for a
// Static proxy's Elastic IP; and nothing is left made by the refused
// create.
func TestQuotaKinds(t *testing.T) {
	cases := map[string]struct {
		quotas ec2fake.Quotas
		static bool
		op     string
	}{
		"InstanceLimitExceeded": {quotas: ec2fake.Quotas{Instances: 1}, op: "create"},
		"VcpuLimitExceeded":     {quotas: ec2fake.Quotas{VCPUs: 3}, op: "create"},
		"AddressLimitExceeded":  {quotas: ec2fake.Quotas{ElasticIPs: 1}, static: true, op: "reserve address"},
	}
	type outcome struct {
		Kind                 provider.Kind
		Op                   string
		NamesCode            bool
		Instances, Addresses int
	}
	for code, c := range cases {
		t.Run(code, func(t *testing.T) {
			e := newEnv(t)
			e.fake.SetQuotas(c.quotas)
			var err error
			for i := range 2 {
				req := requestN(i)
				req.StaticIP = c.static
				_, err = e.p.Create(context.Background(), req)
			}
			got := outcome{Kind: provider.KindOf(err), NamesCode: err != nil && strings.Contains(err.Error(), code),
				Instances: len(e.fake.Instances()), Addresses: len(e.fake.Addresses())}
			var pe *provider.Error
			if errors.As(err, &pe) {
				got.Op = pe.Op
			}
			want := outcome{Kind: provider.KindQuota, Op: c.op, NamesCode: true, Instances: 1, Addresses: 0}
			if c.static {
				want.Addresses = 1
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("the second create past %+v (-want +got):\n%s\n%v", c.quotas, diff, err)
			}
		})
	}
}

// TestQuotas: Quotas reads vpc-max-elastic-ips through the SDK's
// DescribeAccountAttributes and counts the region's Elastic IPs, after
// Static creates and the release of one; instances and vCPUs, which only
// Service Quotas holds, are unreported.
func TestQuotas(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.fake.SetQuotas(ec2fake.Quotas{ElasticIPs: 7})
	var ids []string
	for i := range 3 {
		req := requestN(i)
		req.StaticIP = i < 2
		id, err := e.p.Create(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	e.fake.Settle()
	read := func(region string) provider.Quotas {
		q, err := e.p.Quotas(ctx, region)
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	afterCreates := read("us-east-1")
	// The first proxy goes for good: its instance, then its address.
	in, err := e.p.Get(ctx, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := e.p.Delete(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	e.fake.Settle()
	if err := e.p.Delete(ctx, in.AddressID); err != nil {
		t.Fatal(err)
	}
	got := []provider.Quotas{afterCreates, read("us-east-1"), read("eu-west-1")}
	want := []provider.Quotas{
		{Addresses: provider.Quota{Limit: 7, Usage: 2}},
		{Addresses: provider.Quota{Limit: 7, Usage: 1}},
		{Addresses: provider.Quota{Limit: 7, Usage: 0}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Quotas after 3 creates (2 Static), the release of one address, and in another region (-want +got):\n%s", diff)
	}
	// A fake that enforces no Elastic IP quota reports none, and the
	// provider reads it as unreported, not as an error.
	off := newEnv(t)
	if q, err := off.p.Quotas(ctx, "us-east-1"); err != nil || q != (provider.Quotas{}) {
		t.Errorf("Quotas of a fake without quotas = %+v, %v; want none reported", q, err)
	}
}
