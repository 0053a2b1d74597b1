package azure

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/egress-proxies/egress/internal/provider"
)

func TestValidator(t *testing.T) {
	pol := Policy{Locations: []string{"westeurope", "northcentralus"}, Sizes: []string{DefaultSize, "Standard_B2s"}, Images: DefaultAllowedImages}
	if err := pol.Check(); err != nil {
		t.Fatal(err)
	}
	v := Validator(pol)
	for _, tc := range []struct {
		name string
		req  provider.ValidateRequest
		want []string // field/reason
	}{
		{"defaults", provider.ValidateRequest{Placement: provider.Placement{Region: "westeurope"}}, nil},
		{"a zone of the location", provider.ValidateRequest{Placement: provider.Placement{Region: "westeurope", Zone: "westeurope-3", MachineType: "Standard_B2s"}}, nil},
		{"a warm pool", provider.ValidateRequest{Placement: provider.Placement{Region: "westeurope"}, Pool: true}, nil},
		{"a location not allowed", provider.ValidateRequest{Placement: provider.Placement{Region: "eastus"}}, []string{"placement.region/" + provider.ReasonRegionNotAllowed}},
		{"not a location", provider.ValidateRequest{Placement: provider.Placement{Region: "West Europe"}}, []string{"placement.region/" + provider.ReasonRegionInvalid}},
		{"a bare zone number", provider.ValidateRequest{Placement: provider.Placement{Region: "westeurope", Zone: "1"}}, []string{"placement.zone/" + provider.ReasonZoneNotInRegion}},
		{"another location's zone", provider.ValidateRequest{Placement: provider.Placement{Region: "westeurope", Zone: "eastus-1"}}, []string{"placement.zone/" + provider.ReasonZoneNotInRegion}},
		{"a zone where there are none", provider.ValidateRequest{Placement: provider.Placement{Region: "northcentralus", Zone: "northcentralus-1"}}, []string{"placement.zone/" + provider.ReasonZoneNotInRegion}},
		{"a size not allowed", provider.ValidateRequest{Placement: provider.Placement{Region: "westeurope", MachineType: "Standard_D2s_v5"}}, []string{"placement.machineType/" + provider.ReasonMachineTypeNotAllowed}},
		{"not a size", provider.ValidateRequest{Placement: provider.Placement{Region: "westeurope", MachineType: "b1s"}}, []string{"placement.machineType/" + provider.ReasonMachineTypeInvalid}},
		{"an image not allowed", provider.ValidateRequest{Placement: provider.Placement{Region: "westeurope", Image: "Debian:debian-12:12-gen2:latest"}}, []string{"placement.image/" + provider.ReasonImageNotAllowed}},
		{"not a URN", provider.ValidateRequest{Placement: provider.Placement{Region: "westeurope", Image: "debian-13"}}, []string{"placement.image/" + provider.ReasonImageInvalid}},
		{"user-data too large", provider.ValidateRequest{Placement: provider.Placement{Region: "westeurope"}, CloudInit: strings.Repeat("x", MaxUserDataBytes+1)}, []string{"cloudInit/" + provider.ReasonCloudInitTooLarge}},
		{"user-data at the limit", provider.ValidateRequest{Placement: provider.Placement{Region: "westeurope"}, CloudInit: strings.Repeat("x", MaxUserDataBytes)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, viol := range v(tc.req) {
				got = append(got, viol.Field+"/"+viol.Reason)
				if viol.Description == "" {
					t.Errorf("%s/%s has no description", viol.Field, viol.Reason)
				}
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUserDataLimit: the most user-data the validator takes fits Azure's
// 64 KiB of base64, and one byte more does not.
func TestUserDataLimit(t *testing.T) {
	b64 := func(n int) int { return (n + 2) / 3 * 4 }
	if b64(MaxUserDataBytes) > 65535 || b64(MaxUserDataBytes+3) <= 65535 {
		t.Errorf("MaxUserDataBytes %d encodes to %d bytes of base64; want the most that fits 65535", MaxUserDataBytes, b64(MaxUserDataBytes))
	}
}

func TestPolicyCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		pol  Policy
		want string // a part of the error; "" for none
	}{
		{"the defaults", Policy{Locations: []string{"westeurope"}, Sizes: DefaultAllowedSizes, Images: DefaultAllowedImages}, ""},
		{"no location", Policy{Sizes: DefaultAllowedSizes, Images: DefaultAllowedImages}, "allows no location"},
		{"a display name", Policy{Locations: []string{"West Europe"}, Sizes: DefaultAllowedSizes, Images: DefaultAllowedImages}, `location "West Europe"`},
		{"without the default size", Policy{Locations: []string{"westeurope"}, Sizes: []string{"Standard_B2s"}, Images: DefaultAllowedImages}, "does not allow " + DefaultSize},
		{"a bad image", Policy{Locations: []string{"westeurope"}, Sizes: DefaultAllowedSizes, Images: []string{DefaultImage, "debian"}}, `image "debian"`},
		{"without the default image", Policy{Locations: []string{"westeurope"}, Sizes: DefaultAllowedSizes, Images: []string{"Debian:debian-12:12-gen2:latest"}}, "does not allow " + DefaultImage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.pol.Check()
			if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("Check() = %v, want an error holding %q", err, tc.want)
			}
		})
	}
}

func TestParseSubnets(t *testing.T) {
	const we = "/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/v/subnets/we"
	for _, tc := range []struct {
		in   []string
		want map[string]string
		err  string
	}{
		{[]string{"westeurope=" + we}, map[string]string{"westeurope": we}, ""},
		{[]string{"westeurope=" + we, "westeurope=" + we}, nil, "two subnets"},
		{[]string{we}, nil, "not location=SUBNET_ID"},
		{[]string{"westeurope=/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/v"}, nil, "is not a subnet's id"},
		{nil, nil, "names no subnet"},
	} {
		got, err := ParseSubnets(tc.in)
		if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("ParseSubnets(%q) error = %v, want one holding %q", tc.in, err, tc.err)
		}
		if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("ParseSubnets(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

func TestListsItsResourceGroupOnly(t *testing.T) {
	e := newEnv(t)
	other := strings.Replace(e.p.vmID("proxy-a"), "/resourceGroups/"+testGroup+"/", "/resourceGroups/older-group/", 1)
	got := map[string]bool{e.p.vmID("proxy-a"): e.p.Lists(e.p.vmID("proxy-a")), other: e.p.Lists(other), "azure://nonsense": e.p.Lists("azure://nonsense")}
	want := map[string]bool{e.p.vmID("proxy-a"): true, other: false, "azure://nonsense": false}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Lists (-want +got):\n%s", diff)
	}
}
