package price

import "sortie/schema"

// KeyOf names the price of one node of r at placement pl: its instance
// type, or for a cloud priced per resource (no instance type) the Shape of
// what the node asks for; the zone's price for spot (clouds set spot prices
// per zone), the region's for on-demand.
func KeyOf(pl schema.Placement, r schema.Resources) Key {
	k := Key{Cloud: pl.Cloud, Region: pl.Region, InstanceType: r.InstanceType, Spot: r.UseSpot}
	if k.InstanceType == "" {
		k.InstanceType = ShapeOf(r)
	}
	if k.Spot {
		k.Zone = pl.Zone
	}
	return k
}
