package aws

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"

	sdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/vmside"
	"github.com/egress-proxies/egress/internal/vmstatus"
)

// Create launches the instance and returns without waiting for it.
// RunInstances carries a ClientToken (clientToken): a retry of the same
// attempt answers the instance the first call made, and one whose
// request changed since (a newer AMI, another type) is answered
// IdempotentParameterMismatch, after which the attempt's instance is
// found by its token and adopted when its uid tag is the request's. A
// placement without a zone gets one of its region's allowed zones,
// chosen from the uid and past req.AvoidZones; a Static request has its
// Elastic IP allocated first (a retry finds it by its tags), which Get
// associates once the instance runs.
func (p *Provider) Create(ctx context.Context, req provider.CreateRequest) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", provider.NewError(provider.KindTransient, "create", req.Name, err)
	}
	region := req.Placement.Region
	if !slices.Contains(p.cfg.Regions, region) {
		return "", provider.NewError(provider.KindPermanent, "create", req.Name,
			fmt.Errorf("region %q is not one this deployment uses (AWS_ALLOWED_REGIONS: %s)", region, strings.Join(p.cfg.Regions, ", ")))
	}
	zone, pinned, err := p.chooseZone(ctx, req)
	if err != nil {
		return "", err
	}
	image, err := p.resolveImage(ctx, region, cmp.Or(req.Placement.Image, DefaultImage))
	if err != nil {
		return "", err
	}
	userData, err := p.userData(req)
	if err != nil {
		return "", err
	}
	tags := p.tags(req)
	instanceTags := maps.Clone(tags)
	if req.StartupScript != "" && req.CloudInit == "" {
		instanceTags[tagProbePort] = strconv.Itoa(int(req.Port))
		// The id its status credential and sign key are derived from,
		// the same the Renderer put in its user-data.
		instanceTags[vmside.LabelStatusID] = vmstatus.StatusID(req)
	}
	// An instance that draws its IPv6 sources from a prefix gets it at
	// launch, on its primary interface: no call after the launch that a
	// crash could miss, and a subnet without IPv6 is refused before any
	// instance or Elastic IP is made.
	var iface *types.InstanceNetworkInterfaceSpecification
	if req.IPv6Prefix {
		if iface, err = p.dualStackInterface(ctx, region, zone, req); err != nil {
			return "", err
		}
	}
	if req.StaticIP {
		alloc, ip, err := p.ensureAddress(ctx, region, req)
		if err != nil {
			return "", err
		}
		instanceTags[tagEIP], instanceTags[tagEIPAddress] = alloc, ip
	}
	token := clientToken(req, zone)
	in := &ec2.RunInstancesInput{
		ImageId:      sdk.String(image),
		InstanceType: types.InstanceType(cmp.Or(req.Placement.MachineType, DefaultInstanceType)),
		MinCount:     sdk.Int32(1),
		MaxCount:     sdk.Int32(1),
		ClientToken:  sdk.String(token),
		Placement:    &types.Placement{AvailabilityZone: sdk.String(zone)},
		// A security group by name is one of the region's default VPC,
		// where the instance is launched.
		SecurityGroups: []string{p.cfg.SecurityGroup},
		TagSpecifications: []types.TagSpecification{
			tagSpec(types.ResourceTypeInstance, instanceTags),
			tagSpec(types.ResourceTypeVolume, tags),
			tagSpec(types.ResourceTypeNetworkInterface, tags),
		},
		MetadataOptions: &types.InstanceMetadataOptionsRequest{
			HttpTokens:              types.HttpTokensStateRequired,
			HttpPutResponseHopLimit: sdk.Int32(1),
			HttpEndpoint:            types.InstanceMetadataEndpointStateEnabled,
			InstanceMetadataTags:    types.InstanceMetadataTagsStateDisabled,
		},
	}
	if iface != nil {
		// An interface takes the groups itself, by id: EC2 refuses them
		// beside it.
		in.SecurityGroups = nil
		in.NetworkInterfaces = []types.InstanceNetworkInterfaceSpecification{*iface}
	}
	if userData != "" {
		in.UserData = sdk.String(base64.StdEncoding.EncodeToString([]byte(userData)))
	}
	out, err := p.c.RunInstances(ctx, in, inRegion(region))
	switch kind := classify(err); {
	case err == nil:
		if len(out.Instances) != 1 || out.Instances[0].InstanceId == nil {
			return "", provider.NewError(provider.KindTransient, "create", req.Name, fmt.Errorf("RunInstances answered %d instances, want 1", len(out.Instances)))
		}
		return instanceID(region, *out.Instances[0].InstanceId), nil
	case kind == provider.KindCapacity:
		e := provider.NewError(provider.KindCapacity, "create", req.Name, err)
		if !pinned {
			e.Zone = zone
		}
		p.cfg.Log.Info("aws zone out of capacity", slog.String("zone", zone), slog.String("instance", req.Name), slog.String("code", errorCode(err)))
		return "", e
	case errorCode(err) == "IdempotentParameterMismatch":
		return p.adopt(ctx, region, token, req)
	default:
		if kind == provider.KindQuota {
			p.cfg.Log.Warn("aws quota reached", slog.String("region", region), slog.String("instance", req.Name), slog.String("code", errorCode(err)))
		}
		return "", p.wrap("create", req.Name, err)
	}
}

// clientToken is the RunInstances ClientToken of a create attempt in a
// zone: the same for a retry of the attempt (after a crash, a lost
// answer, a 503), another for a new attempt (req.RequestID) and for
// another zone (a capacity error made none in the first). EC2 takes at
// most 64 ASCII characters.
func clientToken(req provider.CreateRequest, zone string) string {
	attempt := cmp.Or(req.RequestID, req.UID+"/"+req.Name)
	sum := sha256.Sum256([]byte("egress\x00" + req.UID + "\x00" + attempt + "\x00" + zone))
	return "egress-" + hex.EncodeToString(sum[:24])
}

// adopt finds the instance a ClientToken made, after
// IdempotentParameterMismatch, and takes it when its uid tag is the
// request's: the attempt made it, whatever it asked for then.
func (p *Provider) adopt(ctx context.Context, region, token string, req provider.CreateRequest) (string, error) {
	out, err := p.c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{
		Filters: []types.Filter{{Name: sdk.String("client-token"), Values: []string{token}}},
	}, inRegion(region))
	if err != nil {
		return "", p.wrap("create", req.Name, err)
	}
	for _, r := range out.Reservations {
		for _, in := range r.Instances {
			id := sdk.ToString(in.InstanceId)
			if uid := tagValue(in.Tags, provider.LabelUID); uid != req.UID {
				return "", provider.NewError(provider.KindAlreadyExists, "create", req.Name,
					fmt.Errorf("instance %s of client token %s has uid tag %q, not %q: it belongs to something else", id, token, uid, req.UID))
			}
			p.cfg.Log.Info("aws instance of this create attempt adopted", slog.String("instance", req.Name), slog.String("providerID", instanceID(region, id)))
			return instanceID(region, id), nil
		}
	}
	return "", provider.NewError(provider.KindPermanent, "create", req.Name,
		fmt.Errorf("client token %s was used by a request with other parameters, whose instance EC2 no longer lists; a new create attempt makes a new one", token))
}

// chooseZone is the placement's zone (pinned), or one of its region's
// allowed zones chosen from the uid, past those to avoid.
func (p *Provider) chooseZone(ctx context.Context, req provider.CreateRequest) (zone string, pinned bool, err error) {
	pl := req.Placement
	if pl.Zone != "" {
		if regionOfZone(pl.Zone) != pl.Region {
			return "", false, provider.NewError(provider.KindPermanent, "create", req.Name, fmt.Errorf("%q is not an availability zone of region %s", pl.Zone, pl.Region))
		}
		return pl.Zone, true, nil
	}
	zones, err := p.regionZones(ctx, pl.Region)
	if err != nil {
		return "", false, p.wrap("create", req.Name, err)
	}
	if len(zones) == 0 {
		return "", false, provider.NewError(provider.KindPermanent, "create", req.Name,
			fmt.Errorf("region %s has no available zone this deployment allows (AWS_ALLOWED_ZONES: %s)", pl.Region, strings.Join(p.cfg.Zones, ", ")))
	}
	z, ok := provider.ChooseZone(req.UID, zones, req.AvoidZones)
	if !ok {
		return "", false, provider.NewError(provider.KindCapacity, "create", req.Name,
			fmt.Errorf("every zone of %s was out of capacity for this proxy: %s", pl.Region, strings.Join(req.AvoidZones, ", ")))
	}
	return z, false, nil
}

// regionZones are the region's available zones that the operator
// allows, from DescribeAvailabilityZones, kept for cacheFor.
func (p *Provider) regionZones(ctx context.Context, region string) ([]string, error) {
	now := p.cfg.Now()
	p.mu.Lock()
	c, ok := p.zones[region]
	p.mu.Unlock()
	if ok && now.Sub(c.at) < cacheFor {
		return c.zones, nil
	}
	out, err := p.c.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{
		Filters: []types.Filter{
			{Name: sdk.String("state"), Values: []string{"available"}},
			{Name: sdk.String("zone-type"), Values: []string{"availability-zone"}},
		},
	}, inRegion(region))
	if err != nil {
		return nil, err
	}
	var zones []string
	for _, z := range out.AvailabilityZones {
		name := sdk.ToString(z.ZoneName)
		if len(p.cfg.Zones) == 0 || slices.Contains(p.cfg.Zones, name) {
			zones = append(zones, name)
		}
	}
	p.mu.Lock()
	p.zones[region] = cachedZones{zones: zones, at: now}
	p.mu.Unlock()
	return zones, nil
}

// resolveImage is the AMI of an image of the policy in region: an AMI id
// as it is, or, for a Debian release (debian-13), the newest of Debian's
// official amd64 AMIs of that release, looked up by its owner and name
// (DescribeImages), kept for cacheFor. The owner is what makes the
// lookup safe: anyone can publish an AMI named debian-13-amd64-….
func (p *Provider) resolveImage(ctx context.Context, region, image string) (string, error) {
	if strings.HasPrefix(image, "ami-") {
		return image, nil
	}
	pattern, ok := debianReleases[image]
	if !ok {
		return "", provider.NewError(provider.KindPermanent, "resolve image", image, fmt.Errorf("%q is neither an AMI id nor a Debian release (%s)", image, releaseList()))
	}
	key, now := region+"/"+image, p.cfg.Now()
	p.mu.Lock()
	c, ok := p.images[key]
	p.mu.Unlock()
	if ok && now.Sub(c.at) < cacheFor {
		return c.id, nil
	}
	out, err := p.c.DescribeImages(ctx, &ec2.DescribeImagesInput{
		Owners: []string{DebianOwner},
		Filters: []types.Filter{
			{Name: sdk.String("name"), Values: []string{pattern}},
			{Name: sdk.String("architecture"), Values: []string{"x86_64"}},
			{Name: sdk.String("state"), Values: []string{"available"}},
		},
	}, inRegion(region))
	if err != nil {
		return "", p.wrap("resolve image", image, err)
	}
	var best types.Image
	for _, im := range out.Images {
		if sdk.ToString(im.OwnerId) != DebianOwner {
			continue
		}
		if sdk.ToString(im.CreationDate) > sdk.ToString(best.CreationDate) {
			best = im
		}
	}
	if best.ImageId == nil {
		return "", provider.NewError(provider.KindPermanent, "resolve image", image,
			fmt.Errorf("region %s has no image of owner %s named %s (Debian's official AMIs)", region, DebianOwner, pattern))
	}
	p.mu.Lock()
	p.images[key] = cached{id: *best.ImageId, at: now}
	p.mu.Unlock()
	return *best.ImageId, nil
}

// userData is what the instance boots with: a spec's own cloud-init as
// it is, or the default bootstrap as the Renderer makes it; within EC2's
// limit either way.
func (p *Provider) userData(req provider.CreateRequest) (string, error) {
	ud := req.CloudInit
	if ud == "" && req.StartupScript != "" {
		var err error
		if ud, err = p.cfg.Renderer.UserData(req); err != nil {
			return "", provider.NewError(provider.KindPermanent, "create", req.Name, fmt.Errorf("rendering the user-data: %w", err))
		}
	}
	if len(ud) > MaxUserDataBytes {
		return "", provider.NewError(provider.KindPermanent, "create", req.Name,
			fmt.Errorf("the user-data is %d bytes, over EC2's limit of %d", len(ud), MaxUserDataBytes))
	}
	return ud, nil
}

// ensureAddress returns the proxy's Elastic IP in region (its allocation
// id and address), allocating it first if it has none: tagged like the
// instance (managed, uid, deployment), so every instance of the proxy
// has it, the next try of a create that crashed after allocating finds
// it, and the collector finds it once no instance holds it and no
// document claims its uid. AllocateAddress has no idempotency token, so
// the tags are the key; if two were ever made, the lowest allocation id
// is the proxy's and the collector takes the other.
func (p *Provider) ensureAddress(ctx context.Context, region string, req provider.CreateRequest) (string, string, error) {
	out, err := p.c.DescribeAddresses(ctx, &ec2.DescribeAddressesInput{
		Filters: []types.Filter{
			{Name: sdk.String("tag:" + provider.LabelManaged), Values: []string{provider.LabelManagedYes}},
			{Name: sdk.String("tag:" + provider.LabelUID), Values: []string{req.UID}},
			{Name: sdk.String("tag:" + provider.LabelDeployment), Values: []string{p.cfg.Deployment}},
		},
	}, inRegion(region))
	if err != nil {
		return "", "", p.wrap("reserve address", req.Name, err)
	}
	if len(out.Addresses) > 0 {
		a := slices.MinFunc(out.Addresses, func(x, y types.Address) int {
			return strings.Compare(sdk.ToString(x.AllocationId), sdk.ToString(y.AllocationId))
		})
		return sdk.ToString(a.AllocationId), sdk.ToString(a.PublicIp), nil
	}
	tags := p.tags(req)
	tags[tagCreated] = p.cfg.Now().UTC().Format(timeLayout)
	res, err := p.c.AllocateAddress(ctx, &ec2.AllocateAddressInput{
		Domain:            types.DomainTypeVpc,
		TagSpecifications: []types.TagSpecification{tagSpec(types.ResourceTypeElasticIp, tags)},
	}, inRegion(region), once)
	if err != nil {
		if classify(err) == provider.KindQuota {
			p.cfg.Log.Warn("aws quota reached", slog.String("region", region), slog.String("instance", req.Name), slog.String("code", errorCode(err)))
		}
		return "", "", p.wrap("reserve address", req.Name, err)
	}
	if res.AllocationId == nil || res.PublicIp == nil {
		return "", "", provider.NewError(provider.KindTransient, "reserve address", req.Name, errors.New("AllocateAddress answered no allocation id or address"))
	}
	p.cfg.Log.Info("aws elastic ip allocated", slog.String("instance", req.Name), slog.String("providerID", eipID(region, *res.AllocationId)))
	return *res.AllocationId, *res.PublicIp, nil
}

// once is the per-call option of a call the SDK must not retry: one
// without an idempotency token (AllocateAddress), whose retry after a
// lost answer would make a second resource. The caller's next try finds
// the first by its tags.
func once(o *ec2.Options) { o.Retryer = retry.AddWithMaxAttempts(o.Retryer, 1) }

// tagCreated is when an Elastic IP was allocated, which EC2 does not
// say of one: the collector's grace period reads it.
const tagCreated = "egress-created"

// timeLayout is how tagCreated is written.
const timeLayout = "2006-01-02T15:04:05Z"

func tagSpec(typ types.ResourceType, tags map[string]string) types.TagSpecification {
	spec := types.TagSpecification{ResourceType: typ}
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		spec.Tags = append(spec.Tags, types.Tag{Key: sdk.String(k), Value: sdk.String(tags[k])})
	}
	return spec
}

func tagValue(tags []types.Tag, key string) string {
	v, _ := lookupTag(tags, key)
	return v
}

func lookupTag(tags []types.Tag, key string) (string, bool) {
	for _, t := range tags {
		if sdk.ToString(t.Key) == key {
			return sdk.ToString(t.Value), true
		}
	}
	return "", false
}
