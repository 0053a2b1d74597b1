package dofake

import (
	"net/http"
	"slices"

	"github.com/digitalocean/godo"
)

// The catalog the fake serves: DigitalOcean's regions as its API
// description enumerates them, those closed to new Droplets (nyc2, sfo1,
// ams2) among them, unavailable; the Basic sizes the
// provider's defaults name, sold in every open region; the Debian images
// by slug.
var (
	sizeSlugs = []string{"s-1vcpu-1gb", "s-1vcpu-2gb", "s-2vcpu-2gb", "s-2vcpu-4gb"}
	Regions   = []godo.Region{
		region("nyc1", "New York 1", true), region("nyc2", "New York 2", false), region("nyc3", "New York 3", true),
		region("sfo1", "San Francisco 1", false), region("sfo2", "San Francisco 2", true), region("sfo3", "San Francisco 3", true),
		region("ams2", "Amsterdam 2", false), region("ams3", "Amsterdam 3", true), region("sgp1", "Singapore 1", true),
		region("lon1", "London 1", true), region("fra1", "Frankfurt 1", true), region("tor1", "Toronto 1", true),
		region("blr1", "Bangalore 1", true), region("syd1", "Sydney 1", true),
	}
	// The Basic sizes with the prices DigitalOcean's pricing page and
	// /v2/sizes give them (USD, price_hourly to five decimals, the
	// monthly price 672 hours of it; transfer in TB a month).
	Sizes = []godo.Size{
		size("s-1vcpu-1gb", 1, 1024, 25, 1, 6, 0.00893),
		size("s-1vcpu-2gb", 1, 2048, 50, 2, 12, 0.01786),
		size("s-2vcpu-2gb", 2, 2048, 60, 3, 18, 0.02679),
		size("s-2vcpu-4gb", 2, 4096, 80, 4, 24, 0.03571),
	}
	Images = []godo.Image{image(190000001, "debian-13-x64", "13 x64"), image(190000002, "debian-12-x64", "12 x64")}
)

func region(slug, name string, open bool) godo.Region {
	r := godo.Region{Slug: slug, Name: name, Available: open, Features: []string{"backups", "ipv6", "metadata", "install_agent", "storage"}}
	if open {
		r.Sizes = sizeSlugs
	}
	return r
}

func size(slug string, vcpus, memory, disk int, transfer, monthly, hourly float64) godo.Size {
	open := []string{"nyc1", "nyc3", "sfo2", "sfo3", "ams3", "sgp1", "lon1", "fra1", "tor1", "blr1", "syd1"}
	return godo.Size{Slug: slug, Vcpus: vcpus, Memory: memory, Disk: disk, Transfer: transfer, PriceMonthly: monthly,
		PriceHourly: hourly, Regions: open, Available: true, Description: "Basic"}
}

func image(id int, slug, name string) godo.Image {
	var regions []string
	for _, r := range Regions {
		if r.Available {
			regions = append(regions, r.Slug)
		}
	}
	return godo.Image{ID: id, Name: name, Type: "base", Distribution: "Debian", Slug: slug, Public: true, Regions: regions,
		MinDiskSize: 15, SizeGigaBytes: 2.5, Created: "2025-08-12T00:00:00Z", Status: "available", Tags: []string{}}
}

func findRegion(slug string) (godo.Region, bool) {
	i := slices.IndexFunc(Regions, func(r godo.Region) bool { return r.Slug == slug })
	if i < 0 {
		return godo.Region{}, false
	}
	return Regions[i], true
}

func findSize(slug string) (godo.Size, bool) {
	i := slices.IndexFunc(Sizes, func(z godo.Size) bool { return z.Slug == slug })
	if i < 0 {
		return godo.Size{}, false
	}
	return Sizes[i], true
}

func findImage(ref godo.DropletCreateImage) (godo.Image, bool) {
	i := slices.IndexFunc(Images, func(im godo.Image) bool {
		return (ref.Slug != "" && im.Slug == ref.Slug) || (ref.ID != 0 && im.ID == ref.ID)
	})
	if i < 0 {
		return godo.Image{}, false
	}
	return Images[i], true
}

var catalogRoutes = []route{
	{http.MethodGet, "regions.list", path(`/regions`), func(s *Server, w *writer, r *http.Request, _ []string) {
		var all []wireRegion
		for _, rg := range Regions {
			all = append(all, wireRegionOf(rg))
		}
		items, links, meta := page(s, r, all)
		w.json(http.StatusOK, struct {
			Regions []wireRegion `json:"regions"`
			Links   *godo.Links  `json:"links"`
			Meta    *godo.Meta   `json:"meta"`
		}{items, links, meta})
	}},
	{http.MethodGet, "sizes.list", path(`/sizes`), func(s *Server, w *writer, r *http.Request, _ []string) {
		var all []wireSize
		for _, z := range Sizes {
			all = append(all, wireSizeOf(z))
		}
		items, links, meta := page(s, r, all)
		w.json(http.StatusOK, struct {
			Sizes []wireSize  `json:"sizes"`
			Links *godo.Links `json:"links"`
			Meta  *godo.Meta  `json:"meta"`
		}{items, links, meta})
	}},
	{http.MethodGet, "account.get", path(`/account`), func(s *Server, w *writer, r *http.Request, _ []string) {
		a := godo.Account{Email: "proxies@example.com", UUID: "b6fc48dbf6d9906cace5f3c21cf9d2a0e3a4f1c8", Status: "active"}
		w.json(http.StatusOK, struct {
			Account wireAccount `json:"account"`
		}{wireAccount{Account: a, DropletLimit: s.dropletLimit, FloatingIPLimit: s.reservedIPLimit, ReservedIPLimit: s.reservedIPLimit, EmailVerified: true}})
	}},
}
