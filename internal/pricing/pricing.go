// Package pricing is what a proxy costs: the prices each cloud publishes
// for what a proxy uses (its VM by the hour, its public IPv4 address by
// the hour, its internet egress by the GB), kept as the cloud gives them,
// and the arithmetic that turns them and a month's use into money.
//
// Amounts are exact: a Money is a whole number of billionths of its
// currency's unit (as google.type.Money's nanos count them), so a price of
// 0.0052 EUR an hour and a month's sum of thousands of them add up without
// a float's rounding; an amount is rounded to the cent only when it is
// shown (Money.Cents). Currencies are kept as each cloud gives them: a
// sum across clouds converts at the deployment's own dated rates
// (Rates), never at a guessed one.
//
// This file is the contract the clouds' price sources (each cloud's
// plugin.Plugin.Prices), the catalog kept in the store, and the cost of a
// proxy and a namespace (status.cost, budgets) meet at.
package pricing

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Nano is one unit of a currency in Money's terms.
const Nano int64 = 1_000_000_000

// Money is an amount in a currency: Nanos billionths of the currency's
// unit. The zero Money is no amount, in no currency.
type Money struct {
	// Currency is the ISO 4217 code, upper case ("EUR", "USD").
	Currency string `json:"currency" firestore:"currency"`
	// Nanos is the amount in billionths of the unit: 0.0052 is 5_200_000.
	Nanos int64 `json:"nanos" firestore:"nanos"`
}

// Price is what a proxy of one cloud costs at one placement, as the cloud
// published it when it was read.
type Price struct {
	// Provider is the cloud's provider type ("hetzner").
	Provider string `json:"provider" firestore:"provider"`
	// Region, Zone and MachineType are the placement the price is of, in
	// the cloud's own words (proxy.Placement's); Zone is empty where the
	// price is the region's.
	Region      string `json:"region" firestore:"region"`
	Zone        string `json:"zone,omitempty" firestore:"zone,omitempty"`
	MachineType string `json:"machineType" firestore:"machineType"`
	// VMPerHour is the VM's price an hour (its disk included where the
	// cloud prices them together).
	VMPerHour Money `json:"vmPerHour" firestore:"vmPerHour"`
	// IPv4PerHour is the public IPv4 address's price an hour, where the
	// cloud bills it apart (AWS, Google Cloud, a reserved address); zero
	// Nanos where it is part of the VM's.
	IPv4PerHour Money `json:"ipv4PerHour" firestore:"ipv4PerHour"`
	// EgressPerGB is the price of a GB (10^9 bytes, or 2^30 where the
	// cloud bills GiB: EgressUnitBytes says) leaving the VM to the
	// internet, beyond IncludedEgressBytes.
	EgressPerGB     Money `json:"egressPerGB" firestore:"egressPerGB"`
	EgressUnitBytes int64 `json:"egressUnitBytes" firestore:"egressUnitBytes"`
	// IncludedEgressBytes are the bytes of egress a VM carries in a month
	// at no price (Hetzner's included traffic), prorated by the hours the
	// VM ran in the month where the cloud prorates it; 0 is none.
	IncludedEgressBytes int64 `json:"includedEgressBytes,omitempty" firestore:"includedEgressBytes,omitempty"`
	// Source names where the price was read ("hetzner GET /v1/server_types"),
	// and ReadTime when.
	Source   string    `json:"source" firestore:"source"`
	ReadTime time.Time `json:"readTime" firestore:"readTime"`
}

// Key is what a price is asked for by: a cloud and a placement.
type Key struct {
	Provider, Region, Zone, MachineType string
}

// KeysOf are the keys of provider's placements an operator allows: each
// region with each machine type, priced by region (a type's price is the
// region's, whichever zone). The clouds that price by region alone name
// their allowed placements with it.
func KeysOf(provider string, regions, machineTypes []string) []Key {
	var out []Key // nil with no region: nothing priced
	for _, r := range regions {
		for _, t := range machineTypes {
			out = append(out, Key{Provider: provider, Region: r, MachineType: t})
		}
	}
	return out
}

// Source reads a cloud's prices from its price API (Hetzner's server
// types, DigitalOcean's sizes, AWS's Price List, Google's Cloud Billing
// Catalog, Azure's Retail Prices), with the functions' own identity.
type Source interface {
	// Prices returns the prices of keys, all of the source's cloud, in the
	// order asked. A key the cloud publishes no price for is an
	// *UnknownError in errs at its index, and its Price is zero; err is
	// for the source as a whole (the API cannot be reached).
	Prices(ctx context.Context, keys []Key) (prices []Price, errs []error, err error)
}

// UnknownError says why a price cannot be had: the proxy is still
// created, and its cost says "unknown" and this reason.
type UnknownError struct {
	Key    Key
	Reason string
}

func (e *UnknownError) Error() string {
	return fmt.Sprintf("no price for %s %s %s %s: %s", e.Key.Provider, e.Key.Region, e.Key.Zone, e.Key.MachineType, e.Reason)
}

// ErrNoPrices is a cloud whose plugin declares no price source.
var ErrNoPrices = errors.New("the cloud publishes no prices the product reads")

// Catalog is the prices the deployment last read, as the store keeps them
// (refreshed daily from each cloud's Source): what a proxy's cost and a
// namespace's forecast are computed from, never a cloud's API on a
// request's path.
type Catalog interface {
	// Price is the price of key as last read; an *UnknownError when none
	// was read for it (the cloud publishes none, or its API failed), with
	// the reason.
	Price(ctx context.Context, key Key) (Price, error)
}
