package dofake

import "github.com/digitalocean/godo"

// godo writes a field that is empty (false, 0, an empty list) as nothing,
// where DigitalOcean's API description requires it: these are godo's
// types, with those fields written always (a field of the outer struct
// hides the embedded one of the same JSON name).

// wireRegion is a region as the API writes it, unavailable ones too.
type wireRegion struct {
	godo.Region
	Sizes     []string `json:"sizes"`
	Available bool     `json:"available"`
	Features  []string `json:"features"`
}

func wireRegionOf(r godo.Region) wireRegion {
	return wireRegion{Region: r, Sizes: orEmpty(r.Sizes), Available: r.Available, Features: orEmpty(r.Features)}
}

// wireSize is a size as the API writes it.
type wireSize struct {
	godo.Size
	Regions     []string `json:"regions"`
	Available   bool     `json:"available"`
	Description string   `json:"description"`
}

func wireSizeOf(z godo.Size) wireSize {
	return wireSize{Size: z, Regions: orEmpty(z.Regions), Available: z.Available, Description: z.Description}
}

// wireDroplet is a Droplet as the API writes it: every field the
// description requires, the lists empty rather than left out, and a
// Droplet without backups given its next backup window all the same (the
// description's schema has it an object, where DigitalOcean's own
// example writes null).
type wireDroplet struct {
	godo.Droplet
	Region           wireRegion         `json:"region"`
	Size             wireSize           `json:"size"`
	BackupIDs        []int              `json:"backup_ids"`
	SnapshotIDs      []int              `json:"snapshot_ids"`
	Features         []string           `json:"features"`
	Locked           bool               `json:"locked"`
	Tags             []string           `json:"tags"`
	NextBackupWindow *godo.BackupWindow `json:"next_backup_window"`
	Networks         *godo.Networks     `json:"networks"`
}

// wireReservedIP is a reserved IP as the API writes it: its Droplet, or
// null.
type wireReservedIP struct {
	IP        string       `json:"ip"`
	Region    wireRegion   `json:"region"`
	Droplet   *wireDroplet `json:"droplet"`
	Locked    bool         `json:"locked"`
	ProjectID string       `json:"project_id,omitempty"`
}

// wireTag is a tag with its resources' counts.
type wireTag struct {
	Name      string       `json:"name"`
	Resources wireTagCount `json:"resources"`
}

type wireTagCount struct {
	Count           int        `json:"count"`
	LastTaggedURI   string     `json:"last_tagged_uri,omitempty"`
	Droplets        wireCounts `json:"droplets"`
	Images          wireCounts `json:"images"`
	Volumes         wireCounts `json:"volumes"`
	VolumeSnapshots wireCounts `json:"volume_snapshots"`
	Databases       wireCounts `json:"databases"`
}

type wireCounts struct {
	Count         int    `json:"count"`
	LastTaggedURI string `json:"last_tagged_uri,omitempty"`
}

// wireAccount is the account as the API writes it.
type wireAccount struct {
	godo.Account
	DropletLimit    int    `json:"droplet_limit"`
	FloatingIPLimit int    `json:"floating_ip_limit"`
	ReservedIPLimit int    `json:"reserved_ip_limit"`
	EmailVerified   bool   `json:"email_verified"`
	StatusMessage   string `json:"status_message"`
}

// wireAction is an action as the API writes it, with its region whole.
type wireAction struct {
	godo.Action
	Region wireRegion `json:"region"`
}

func wireActionOf(a *godo.Action) wireAction {
	rg, _ := findRegion(a.RegionSlug)
	return wireAction{Action: *a, Region: wireRegionOf(rg)}
}
