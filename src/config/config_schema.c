#include "config/config_schema.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* The registry                                                                               */

static const gf_config_block_info blocks[] = {
    {"Domain", 0,
     "The box of the simulation, its walls and obstacles. Faces of a non-periodic axis without a "
     "wall are open: a particle whose centre leaves the box there is deleted, counted and weighed "
     "like outflow, and reported in the summary as having left through open faces (behind a "
     "walled face a centre arrives only if the solver let a particle through the wall; it is "
     "removed the same way)."},
    {"Domain/Wall", 1, "A plane wall; the particles are on the side its normal points to."},
    {"Domain/Box", 1,
     "An obstacle: a solid box with faces along the axes, of infinite mass to every shape."},
    {"Domain/Cylinder", 1, "An obstacle: a solid cylinder with caps, of infinite mass."},
    {"Domain/Mesh", 1,
     "A triangle mesh of infinite mass (at most 16): from an STL file or a simple surface made "
     "in place (a rectangle, a disc with a hole, an open or capped cylinder or cone), static or "
     "moving and turning at constant rates or on a schedule. Triangles are two-sided; contacts are "
     "the surface's "
     "locally closest points (docs/user-guide.md, Triangle meshes). Every particle shape collides "
     "with "
     "meshes."},
    {"Domain/Wall/Schedule", 1,
     "A change of the wall's velocity: from `time` on it moves at `velocity` (piecewise constant; "
     "before the first Schedule at the block's own velocity). Times must increase from block to "
     "block. A change applies from the first step starting at or after its time (up to a "
     "millionth of dt): a step moves at the velocity in force at its start."},
    {"Domain/Box/Schedule", 1, "As Domain/Wall/Schedule, for the box."},
    {"Domain/Cylinder/Schedule", 1, "As Domain/Wall/Schedule, for the cylinder."},
    {"Domain/Mesh/Schedule", 1,
     "A change of the mesh's motion: from `time` on it moves at `velocity` and turns at "
     "`angular_velocity` about its pivot (both zero when left out, not the previous motion's). "
     "Times must increase; a change applies from the first step starting at or after its time, "
     "as for walls. The pose advances exactly within each phase."},
    {"Materials", 0,
     "The materials and the contact laws of each pair of them: friction, restitution, "
     "cohesion, rolling and twisting resistance. Each "
     "is a property of a pair of materials (a table with a default), not the combination of two "
     "per-material values. "
     "Besides the Material blocks there is always the material default (index 0, density "
     "1000 kg/m^3), which every material key names unless told otherwise; at most 16 materials "
     "in all."},
    {"Materials/Material", 1, "A material."},
    {"Materials/Pair", 1,
     "The friction, restitution, cohesion, rolling and twisting friction of one pair of "
     "materials (at least one of them; "
     "the others keep the Materials block's defaults)."},
    {"Clump", 1,
     "A clump template: a rigid union of 1 to 32 spheres (a multisphere particle) for shape "
     "clump, given in any frame; the members are moved into the principal frame."},
    {"Clump/Sphere", 1, "A member sphere of the clump."},
    {"Body", 1,
     "One rigid body each. Bodies get the ids after the particle file's and the lattice's. A "
     "body that reaches outside the domain (along a non-periodic axis), overlaps a wall, an "
     "obstacle, another body or a particle of the lattice or the particle file is refused, "
     "naming both."},
    {"Particles", 0,
     "At most one: particles from a file (a CSV table, or a granflow snapshot or checkpoint), "
     "placed before the Lattice and Body blocks, whose ids follow the file's largest; not read "
     "on --restart (docs/user-guide.md, Particle files)."},
    {"Lattice", 0,
     "The initial particles on a lattice of sites, drawn from a mixture of kinds, sizes and "
     "orientations (docs/user-guide.md, Generators of particles of any shape). A particle's centre "
     "of "
     "mass is at its site. Particles overlapping a wall or obstacle are left out (their shape "
     "decides: the bounding sphere first, the exact shape when that touches), and their number "
     "is printed at start; touching (up to the rounding of the decimal input) is not "
     "overlapping. Along a periodic axis the sites must lie in [min, max) and particles may "
     "cross the face, but the last must clear the periodic image of the first."},
    {"Lattice/Kind", 1,
     "One kind of particle of the mixture (at most 16): the shape keys of a Body block, a "
     "fraction and a material. Shape keys of the generator's block beside Kind blocks are "
     "refused."},
    {"Lattice/Size", 1, "One scale of size discrete (at most 16)."},
    {"Inflow", 0,
     "A piston wall at x = position with normal +x, moving at speed; whenever it has moved "
     "reset_distance it jumps back and releases a new layer of particles on a grid in y and z, "
     "drawn like the lattice's. A layer may hold at most 1e8 grid points. At a reset, grid "
     "points that a particle still overlaps by more than 1% of the largest bounding radius stay "
     "empty in that layer (bounding spheres first, the exact shapes when those overlap; decided "
     "alike on every rank count)."},
    {"Inflow/Kind", 1, "As Lattice/Kind, for the inflow's particles."},
    {"Inflow/Size", 1, "As Lattice/Size, for the inflow's particles."},
    {"Outflow", 0,
     "Particles with x beyond position are deleted. Without an Outflow block, particles still "
     "leave through open faces (see Domain)."},
    {"Insert", 1,
     "Particles inserted at random places in a region (box or cylinder) at a rate, or all at "
     "once, drawn like the lattice's (docs/user-guide.md, Insertion and outlets). Each is placed "
     "with its "
     "bounding sphere inside the region, clear of every particle, wall and obstacle (exact "
     "shapes), decided alike on every rank count; particles that find no place in 20 attempts "
     "each are carried over to the next event (a warning is printed once)."},
    {"Insert/Kind", 1, "As Lattice/Kind, for the inserted particles."},
    {"Insert/Size", 1, "As Lattice/Size, for the inserted particles."},
    {"Outlet", 1,
     "Particles whose centre enters the region (the side of a plane its normal points to, a "
     "box or a cylinder) are deleted, and counted with their mass in the run summary, the "
     "statistics file (a column of mass flow rate per outlet) and checkpoints."},
    {"Stage", 1,
     "From its time on, the run goes on with other values of the keys a user changes between the "
     "stages of an experiment (fill, then open the gate with other friction): contact laws, "
     "gravity, the time step, the solver, inserts and outlets. Stages apply in order of time, "
     "each on top of those before it, at the first step that starts at or after its time; the "
     "contact history goes on, and a restart applies the stages due by the checkpoint's time "
     "(docs/user-guide.md, Stages)."},
    {"Physics", 0, "External fields."},
    {"Time", 0, "The time step and the length of the run."},
    {"Solver", 0,
     "The contact solver: non-linear block Gauss-Seidel sweeps over the contacts (docs/physics.md, "
     "The stopping test of the solver)."},
    {"Contact", 0, "Contact detection."},
    {"Output", 0, "Progress lines, snapshots and checkpoints."},
    {"Statistics", 0,
     "The statistics file (a CSV row every `every` steps) and the summary at the end of a run."},
    {"Forces", 0,
     "The force of the particles on each wall and obstacle (a CSV row every `every` steps): the "
     "contact impulses on it since the previous row over that time, in columns wall0_fx .. box0_fx "
     ".. cyl0_fx .. mesh0_fx .. (N), with torque_point also the torques wall0_tx .. (N m) about "
     "it, from the contact points. Continued after a restart."},
    {"Tracks", 0,
     "The tracks of chosen particles (a CSV row per particle every `every` steps): step, time, id, "
     "position, velocity, angular velocity. Continued after a restart."},
};

/* One line per key. Blocks that read a key alike (the same function, or the same meaning and
 * default) share its line. */
static const gf_config_key keys[] = {
    {"Domain", "min", GF_KEY_VECTOR, NULL, "each within +-1e15",
     "The lower corner of the box (m)."},
    {"Domain", "max", GF_KEY_VECTOR, NULL, "above min on every axis, each within +-1e15",
     "The upper corner of the box (m)."},
    {"Domain", "periodic", GF_KEY_VECTOR, "< 0, 0, 0 >", "0 or 1 per axis",
     "1 makes an axis periodic: positions are wrapped into [min, max) exactly, so a particle on "
     "the seam has exactly one owner."},
    {"Domain", "processes", GF_KEY_VECTOR, "< 0, 0, 0 >", "whole numbers, all three or none",
     "Ranks along x, y and z; none: a decomposition chosen from the rank count and the box "
     "shape, minimising the subdomain surface."},
    {"Domain", "balance_every", GF_KEY_INTEGER, "0", "[0, 1e9]",
     "Steps between load balancings under MPI (0: never): the cuts between subdomains move so "
     "that each slab carries an equal share of the work (a particle and each contact one unit), "
     "at most half a subdomain per balancing and never thinner than twice the interaction range. "
     "With meshes, every rank then keeps every triangle."},
    {"Domain", "ghost_skin_fraction", GF_KEY_NUMBER, "0.5", "[0, 10]",
     "The skin of the ghost lists under MPI, in radii of the largest particle: ghosts are copied "
     "from every particle within the interaction range plus the skin, and migration and a new "
     "ghost list wait until a particle has moved by half of the skin (or the range has grown "
     "into it), a particle was added or deleted, or a sort or a balancing is due; the steps in "
     "between send the ghosts' positions, orientations and velocities only. Checkpoints keep the "
     "positions the lists were chosen from, so a restart on the same layout continues bit for "
     "bit. 0: a new list every step."},
    {"Domain", "box_walls", GF_KEY_BOOL, "true", "",
     "Walls on the faces of the non-periodic axes."},
    {"Domain", "wall_axes", GF_KEY_VECTOR, "< 1, 1, 1 >", "0 or 1 per axis",
     "With box_walls, walls on the faces of the axes marked 1 only."},
    {"Domain", "wall_material", GF_KEY_STRING, "\"default\"", "a material's name",
     "The material of the box walls."},
    {"Domain/Wall", "point", GF_KEY_VECTOR, NULL, "", "A point of the plane (m)."},
    {"Domain/Wall", "normal", GF_KEY_VECTOR, NULL, "nonzero",
     "The normal of the plane, towards the particles (normalised by the program)."},
    {"Domain/Wall Domain/Box Domain/Cylinder", "velocity", GF_KEY_VECTOR, "< 0, 0, 0 >", "",
     "The wall or obstacle moves at this velocity (m/s) (before its first Schedule), and "
     "contacts see it."},
    {"Domain/Wall/Schedule Domain/Box/Schedule Domain/Cylinder/Schedule Domain/Mesh/Schedule",
     "time", GF_KEY_NUMBER, NULL, "finite, above the previous Schedule's",
     "From this time on (s) ..."},
    {"Domain/Wall/Schedule Domain/Box/Schedule Domain/Cylinder/Schedule", "velocity", GF_KEY_VECTOR,
     NULL, "", "... the body moves at this velocity (m/s)."},
    {"Domain/Mesh/Schedule", "velocity", GF_KEY_VECTOR, "< 0, 0, 0 >", "",
     "... the mesh moves at this velocity (m/s) ..."},
    {"Domain/Mesh/Schedule", "angular_velocity", GF_KEY_VECTOR, "< 0, 0, 0 >", "",
     "... and turns at this angular velocity about its pivot (rad/s, world frame)."},
    {"Domain/Wall Domain/Box Domain/Cylinder Domain/Mesh", "material", GF_KEY_STRING, "\"default\"",
     "a material's name", "The obstacle's material."},
    {"Domain/Box", "min", GF_KEY_VECTOR, NULL, "", "The lower corner of the box (m)."},
    {"Domain/Box", "max", GF_KEY_VECTOR, NULL, "above min on every axis",
     "The upper corner of the box (m)."},
    {"Domain/Cylinder", "centre", GF_KEY_VECTOR, NULL, "", "The centre of the cylinder (m)."},
    {"Domain/Cylinder", "axis", GF_KEY_VECTOR, "< 0, 0, 1 >", "nonzero",
     "The direction of its axis."},
    {"Domain/Cylinder", "radius", GF_KEY_NUMBER, NULL, "> 0", "Its radius (m)."},
    {"Domain/Cylinder", "length", GF_KEY_NUMBER, NULL, "> 0",
     "Its length along the axis, caps included (m)."},
    {"Domain/Mesh", "file", GF_KEY_STRING, "(this or shape)", "an STL file, ASCII or binary",
     "The mesh's triangles, relative to the working directory. A mesh wholly outside the domain "
     "is refused, naming its extents and the box's, unless it moves; one reaching beyond the "
     "box is warned about."},
    {"Domain/Mesh", "scale", GF_KEY_NUMBER, "1", "[1e-12, 1e12]",
     "A file's coordinates are multiplied by this (0.001 for a file in mm) ..."},
    {"Domain/Mesh", "rotation_axis", GF_KEY_VECTOR, "< 0, 0, 1 >", "nonzero",
     "... then turned about this axis through the origin ..."},
    {"Domain/Mesh", "rotation_angle", GF_KEY_NUMBER, "0", "[-1e6, 1e6]",
     "... by this angle (rad, right-handed) ..."},
    {"Domain/Mesh", "offset", GF_KEY_VECTOR, "< 0, 0, 0 >", "", "... and then moved by this (m)."},
    {"Domain/Mesh", "shape", GF_KEY_WORD, "(this or file)", "rectangle, disc, cylinder, cone",
     "A surface made in place: a rectangle (centre, normal, edge, width, height), a disc "
     "(centre, normal, radius, hole), a tube (cylinder: centre, axis, radius, length, caps) or a "
     "cone frustum (cone: the same and radius_end)."},
    {"Domain/Mesh", "centre", GF_KEY_VECTOR, "(required for shape)", "",
     "The centre of the rectangle, the disc or the axis (m)."},
    {"Domain/Mesh", "normal", GF_KEY_VECTOR, "(required for rectangle, disc)", "nonzero",
     "The normal of the rectangle's or disc's plane."},
    {"Domain/Mesh", "edge", GF_KEY_VECTOR, "< 1, 0, 0 >", "not along normal",
     "The direction of the rectangle's width (projected into its plane)."},
    {"Domain/Mesh", "width", GF_KEY_NUMBER, "(required for rectangle)", "> 0",
     "The rectangle's extent along edge (m)."},
    {"Domain/Mesh", "height", GF_KEY_NUMBER, "(required for rectangle)", "> 0",
     "The rectangle's extent along normal x edge (m)."},
    {"Domain/Mesh", "radius", GF_KEY_NUMBER, "(required for disc, cylinder, cone)", ">= 0",
     "The disc's or tube's radius; a cone's at centre - axis length / 2 (m)."},
    {"Domain/Mesh", "hole", GF_KEY_NUMBER, "0", ">= 0; below radius",
     "The radius of a hole in the middle of the disc (an orifice plate) (m)."},
    {"Domain/Mesh", "axis", GF_KEY_VECTOR, "< 0, 0, 1 >", "nonzero",
     "The direction of the cylinder's or cone's axis."},
    {"Domain/Mesh", "length", GF_KEY_NUMBER, "(required for cylinder, cone)", "> 0",
     "The cylinder's or cone's length along its axis (m)."},
    {"Domain/Mesh", "radius_end", GF_KEY_NUMBER, "(required for cone)", ">= 0",
     "The cone's radius at centre + axis length / 2 (m); 0: a pointed cone."},
    {"Domain/Mesh", "caps", GF_KEY_BOOL, "false", "",
     "Close the cylinder or cone with flat discs at both ends (a drum)."},
    {"Domain/Mesh", "segments", GF_KEY_INTEGER, "48", "[3, 100000]",
     "Straight pieces around a circle; along the axis the pieces are about as long."},
    {"Domain/Mesh", "pivot", GF_KEY_VECTOR, "(centre; a file: < 0, 0, 0 >)", "",
     "The point the mesh turns about (m); it moves with the mesh."},
    {"Domain/Mesh", "velocity", GF_KEY_VECTOR, "< 0, 0, 0 >", "",
     "The mesh moves at this velocity (m/s) (before its first Schedule) ..."},
    {"Domain/Mesh", "angular_velocity", GF_KEY_VECTOR, "< 0, 0, 0 >", "",
     "... and turns at this angular velocity about its pivot (rad/s, world frame); contacts see "
     "the surface's velocity at each point."},
    {"Materials", "friction", GF_KEY_NUMBER, "0", "[0, 1e6]",
     "The friction coefficient of every pair of materials without a Pair block."},
    {"Materials", "restitution", GF_KEY_NUMBER, "0", "[0, 1]",
     "The coefficient of restitution of every pair of materials without a Pair block "
     "(Poisson's): an impact takes e times its compression impulse more, so a lone impact "
     "leaves at e times its approach speed (docs/physics.md, Restitution). 0: purely inelastic, "
     "the paper's model."},
    {"Materials", "restitution_velocity", GF_KEY_NUMBER, "0", "[0, 1e6]",
     "Impacts approaching slower than this (m/s), or than 2 g dt (g the gravity's magnitude), "
     "stay purely inelastic: resting contacts, which approach at g dt per step, stay at rest."},
    {"Materials", "cohesion", GF_KEY_NUMBER, "0", "[0, 1e12]",
     "The pull (N) each touching contact point of every pair of materials without a Pair block "
     "can hold: its normal impulse may reach -cohesion dt, and its friction bound is mu (normal "
     "impulse + cohesion dt) (docs/physics.md, Cohesion)."},
    {"Materials", "cohesion_scaling", GF_KEY_WORD, "none", "none, radius",
     "none: cohesion is a pull in N, the same for every contact point of a pair; radius: in N/m, "
     "times the contact's reduced radius r1 r2 / (r1 + r2) of the bodies' (bounding) radii, the "
     "body's own against the geometry, as adhesion theories scale the pull-off force (DMT: 4 pi "
     "gamma r for surface energy gamma) (docs/physics.md, Cohesion)."},
    {"Materials", "rolling_friction", GF_KEY_NUMBER, "0", "[0, 1000]",
     "Rolling resistance of every pair of materials without a Pair block, dimensionless: a "
     "contact's torque impulse about its tangents opposes the bodies' relative rolling and is at "
     "most rolling_friction r lambda_n, r = r1 r2 / (r1 + r2) of the bodies' radii (the geometry's "
     "infinite), lambda_n the normal impulse. A sphere rolling on a plane then decelerates at "
     "(5/7) rolling_friction g, and rests on an incline iff tan(alpha) <= rolling_friction "
     "(docs/physics.md, Rolling and twisting resistance)."},
    {"Materials", "twisting_friction", GF_KEY_NUMBER, "0", "[0, 1000]",
     "Twisting (spinning) resistance of every pair of materials without a Pair block, "
     "dimensionless: a contact's torque impulse about its normal is at most twisting_friction r "
     "lambda_n (r as for rolling_friction)."},
    {"Materials/Material", "name", GF_KEY_STRING, NULL, "unique, at most 63 characters",
     "The name the material keys use."},
    {"Materials/Material", "density", GF_KEY_NUMBER, NULL, "> 0", "The density (kg/m^3)."},
    {"Materials/Pair", "a", GF_KEY_STRING, "\"default\"", "a material's name",
     "One material of the pair."},
    {"Materials/Pair", "b", GF_KEY_STRING, "\"default\"", "a material's name",
     "The other material of the pair."},
    {"Materials/Pair", "friction", GF_KEY_NUMBER, "(Materials.friction)", "[0, 1e6]",
     "The friction coefficient of the pair."},
    {"Materials/Pair", "restitution", GF_KEY_NUMBER, "(Materials.restitution)", "[0, 1]",
     "The coefficient of restitution of the pair."},
    {"Materials/Pair", "cohesion", GF_KEY_NUMBER, "(Materials.cohesion)", "[0, 1e12]",
     "The pull (N) a touching contact point of the pair can hold."},
    {"Materials/Pair", "rolling_friction", GF_KEY_NUMBER, "(Materials.rolling_friction)",
     "[0, 1000]", "The rolling resistance of the pair."},
    {"Materials/Pair", "twisting_friction", GF_KEY_NUMBER, "(Materials.twisting_friction)",
     "[0, 1000]", "The twisting resistance of the pair."},
    {"Clump", "name", GF_KEY_STRING, NULL, "", "The name the clump keys use."},
    {"Clump/Sphere", "centre", GF_KEY_VECTOR, NULL, "", "The centre, in the clump's frame (m)."},
    {"Clump/Sphere", "radius", GF_KEY_NUMBER, NULL, "> 0", "The radius (m)."},
    {"Body Lattice/Kind Inflow/Kind Insert/Kind", "shape", GF_KEY_WORD, NULL,
     "sphere, box, capsule, cylinder, clump",
     "The shape, whose dimensions follow: radius (sphere, capsule, cylinder), half_extents "
     "(box), half_length (capsule, cylinder), clump and scale (clump)."},
    {"Lattice Inflow Insert", "shape", GF_KEY_WORD, "sphere",
     "sphere, box, capsule, cylinder, clump",
     "The shape of the particles when there are no Kind blocks (with the dimensions as in a "
     "Body block)."},
    {"Body Lattice Inflow Lattice/Kind Inflow/Kind Insert Insert/Kind", "radius", GF_KEY_NUMBER,
     "(required for sphere, capsule, cylinder)", "> 0",
     "The radius of a sphere, capsule or cylinder (m)."},
    {"Body Lattice Inflow Lattice/Kind Inflow/Kind Insert Insert/Kind", "half_extents",
     GF_KEY_VECTOR, "(required for box)", "> 0 each",
     "The half extents of a box along body x, y and z (m)."},
    {"Body Lattice Inflow Lattice/Kind Inflow/Kind Insert Insert/Kind", "half_length",
     GF_KEY_NUMBER, "(required for capsule, cylinder)", "> 0",
     "Half the length of the axis of a capsule or cylinder, along body z (m)."},
    {"Body Lattice Inflow Lattice/Kind Inflow/Kind Insert Insert/Kind", "clump", GF_KEY_STRING,
     "(required for clump)", "the name of a Clump block", "The clump template."},
    {"Body Lattice Inflow Lattice/Kind Inflow/Kind Insert Insert/Kind", "scale", GF_KEY_NUMBER, "1",
     "> 0", "A scale on the clump template's centres and radii."},
    {"Body", "position", GF_KEY_VECTOR, NULL, "",
     "The centre of mass (m); for a clump the origin of the frame its spheres were given in."},
    {"Body", "orientation", GF_KEY_QUATERNION, "< 1, 0, 0, 0 >", "norm 1 within 1e-6",
     "A unit quaternion w, x, y, z, body to world; or axis and angle instead."},
    {"Body", "axis", GF_KEY_VECTOR, "(with angle, instead of orientation)", "nonzero",
     "The axis of the rotation, body to world, by angle."},
    {"Body", "angle", GF_KEY_NUMBER, "(required with axis)", "[-1e6, 1e6]",
     "The angle of the rotation about axis (rad)."},
    {"Body", "material", GF_KEY_STRING, "\"default\"", "a material's name", "The body's material."},
    {"Body", "motion", GF_KEY_WORD, "dynamic", "dynamic, fixed, kinematic",
     "dynamic; fixed: infinite mass at rest (no velocities given); kinematic: infinite mass "
     "moving with velocity and angular_velocity."},
    {"Body", "velocity", GF_KEY_VECTOR, "< 0, 0, 0 >", "", "The velocity (m/s)."},
    {"Body Insert", "angular_velocity", GF_KEY_VECTOR, "< 0, 0, 0 >", "",
     "The angular velocity in the world frame (rad/s)."},
    {"Particles", "file", GF_KEY_STRING, NULL, "",
     "The particle file, relative to the working directory."},
    {"Particles", "format", GF_KEY_WORD, "auto", "auto, hdf5, csv",
     "auto: from the name (.h5, .hdf5: hdf5; .csv: csv; other names need format)."},
    {"Particles", "material", GF_KEY_STRING, "\"default\"", "a material's name",
     "The material of CSV rows that name none."},
    {"Lattice", "count", GF_KEY_VECTOR, NULL,
     "whole numbers in [1, 1e7], at most 1e10 sites in all", "Sites along x, y and z."},
    {"Lattice", "spacing", GF_KEY_NUMBER, "(the least at which no two particles can overlap)",
     "at least the default",
     "The distance of neighbouring sites (m). The least is twice the largest half extent of any "
     "particle along an axis for aligned particles (two sites differ by at least the spacing "
     "along some axis, and bodies whose projections on an axis are apart cannot overlap), the "
     "largest bounding diameter for random orientations."},
    {"Lattice", "origin", GF_KEY_VECTOR, "(Domain.min + spacing on every axis)", "",
     "The first site (m)."},
    {"Lattice", "motion", GF_KEY_WORD, "dynamic", "dynamic, fixed",
     "fixed: the particles have infinite mass and stay put whatever hits them (a rough base of "
     "glued spheres); velocity and spread are then ignored."},
    {"Lattice Insert", "velocity", GF_KEY_VECTOR, "< 0, 0, 0 >", "",
     "The mean initial velocity (m/s)."},
    {"Lattice Insert", "spread", GF_KEY_VECTOR, "< 0, 0, 0 >", ">= 0 each",
     "Each velocity component is uniform in velocity +- spread (m/s)."},
    {"Lattice Inflow Insert", "seed", GF_KEY_INTEGER, "1", "",
     "The random stream: a particle's kind, size, orientation and velocity depend only on it "
     "and the particle's site (and layer), never on the rank count."},
    {"Lattice Inflow Insert", "material", GF_KEY_STRING, "\"default\"", "a material's name",
     "The particles' material."},
    {"Lattice Inflow Insert", "size", GF_KEY_WORD, "fixed", "fixed, uniform, lognormal, discrete",
     "A scale on every kind's dimensions: fixed, scale 1; uniform in [size_min, size_max]; "
     "lognormal with size_median and size_sigma, truncated to [size_min, size_max] and drawn by "
     "inverting the truncated law; discrete: Size blocks."},
    {"Lattice Inflow Insert", "size_min", GF_KEY_NUMBER,
     "(required for uniform; lognormal: size_median exp(-3 size_sigma))",
     "[1e-6, 1e6]; at most size_max", "The smallest scale."},
    {"Lattice Inflow Insert", "size_max", GF_KEY_NUMBER,
     "(required for uniform; lognormal: size_median exp(3 size_sigma))", "[1e-6, 1e6]",
     "The largest scale."},
    {"Lattice Inflow Insert", "size_median", GF_KEY_NUMBER, "1", "[1e-6, 1e6]",
     "The median scale of size lognormal."},
    {"Lattice Inflow Insert", "size_sigma", GF_KEY_NUMBER, "(required for lognormal)", "[1e-6, 3]",
     "The standard deviation of ln scale of size lognormal."},
    {"Lattice Inflow Insert", "orientation", GF_KEY_WORD, "aligned", "aligned, random",
     "aligned: body axes along x, y, z; random: uniform over all rotations (Shoemake's "
     "construction)."},
    {"Lattice/Kind Inflow/Kind Insert/Kind", "fraction", GF_KEY_NUMBER,
     "(1 / the number of Kind blocks)", "[0, 1]; the fractions add up to 1",
     "The share of this kind among the particles."},
    {"Lattice/Kind Inflow/Kind Insert/Kind", "material", GF_KEY_STRING,
     "(the generator's material)", "a material's name", "The material of this kind."},
    {"Lattice/Size Inflow/Size Insert/Size", "scale", GF_KEY_NUMBER, NULL, "[1e-6, 1e6]",
     "The scale on every kind's dimensions."},
    {"Lattice/Size Inflow/Size Insert/Size", "fraction", GF_KEY_NUMBER,
     "(1 / the number of Size blocks)", "[0, 1]; the fractions add up to 1",
     "The share of this scale among the particles."},
    {"Inflow", "position", GF_KEY_NUMBER, "(Domain.min x)",
     "a layer and reset_distance fit in the domain", "The piston's x at the start (m)."},
    {"Inflow", "speed", GF_KEY_NUMBER, "1", "[1e-12, 1e6]", "The piston's speed along +x (m/s)."},
    {"Inflow", "reset_distance", GF_KEY_NUMBER,
     "(the particles' extent along x: a diameter for spheres)", "> 0; at least the default",
     "The piston's travel between layers (m); smaller values than the default are refused "
     "because each new layer would be placed into the previous one."},
    {"Inflow", "spacing", GF_KEY_NUMBER, "(as the lattice's)", "at least the default",
     "The spacing of a layer's grid in y and z (m)."},
    {"Inflow", "particle_velocity", GF_KEY_VECTOR, "(< speed, 0, 0 >)", "",
     "The mean velocity of new particles (m/s)."},
    {"Inflow", "spread", GF_KEY_VECTOR, "< 0, 0, 0 >", "",
     "Each velocity component is uniform in particle_velocity +- spread (m/s)."},
    {"Outflow", "position", GF_KEY_NUMBER, NULL, "within the domain's x range",
     "Particles with x beyond it are deleted (m)."},
    {"Insert", "region", GF_KEY_WORD, NULL, "box, cylinder",
     "The region: box (min, max) or cylinder (centre, axis, cylinder_radius, length); it must "
     "lie in the domain."},
    {"Outlet", "region", GF_KEY_WORD, NULL, "plane, box, cylinder",
     "The region: plane (point, normal: the side the normal points to), box (min, max) or "
     "cylinder (centre, axis, cylinder_radius, length)."},
    {"Insert Outlet", "min", GF_KEY_VECTOR, "(required for box)", "",
     "The lower corner of a box region (m)."},
    {"Insert Outlet", "max", GF_KEY_VECTOR, "(required for box)", "above min on every axis",
     "The upper corner of a box region (m)."},
    {"Insert Outlet", "centre", GF_KEY_VECTOR, "(required for cylinder)", "",
     "The centre of a cylinder region (m)."},
    {"Insert Outlet", "axis", GF_KEY_VECTOR, "< 0, 0, 1 >", "nonzero",
     "The direction of a cylinder region's axis (normalised by the program)."},
    {"Insert Outlet", "cylinder_radius", GF_KEY_NUMBER, "(required for cylinder)", "> 0",
     "The radius of a cylinder region (m); not `radius`, which in Insert is the particles'."},
    {"Insert Outlet", "length", GF_KEY_NUMBER, "(required for cylinder)", "> 0",
     "The length of a cylinder region along its axis (m)."},
    {"Outlet", "point", GF_KEY_VECTOR, "(required for plane)", "", "A point of the plane (m)."},
    {"Outlet", "normal", GF_KEY_VECTOR, "(required for plane)", "nonzero",
     "The plane's normal, towards the side where particles are deleted (normalised)."},
    {"Outlet", "name", GF_KEY_STRING, "(outlet1, outlet2, .. in order)",
     "unique; letters, digits, _ and -",
     "The outlet's name in the summary and in the statistics column outlet_NAME_mass_rate."},
    {"Outlet", "open", GF_KEY_BOOL, "true", "",
     "Whether the outlet deletes what enters its region; a Stage can open a closed one (or close "
     "it) by setting Outlet[name].open."},
    {"Stage", "time", GF_KEY_NUMBER, NULL, ">= 0; after the previous stage's",
     "When the stage begins (s): at the first step that starts at or after it."},
    {"Stage", "name", GF_KEY_STRING, "(stage1, stage2, .. in order)", "",
     "The stage's name in the log."},
    {"Stage", "set", GF_KEY_STRING, NULL,
     "keys of Materials (contact laws), Physics, Time.dt, Solver, Insert.start/stop, "
     "Outlet.open",
     "What changes, as the command line's overrides without their '-', ';' between them: "
     "\"Materials.friction = 0.2; Physics.gravity = <0, 0, -3>; Insert[feed].stop = 0.3\"."},
    {"Insert", "rate", GF_KEY_NUMBER, "(one of rate, mass_rate, count, volume_fraction)", "> 0",
     "Particles per second from start: by time t, rate (t - start) are due (rounded up)."},
    {"Insert", "mass_rate", GF_KEY_NUMBER, "(one of rate, mass_rate, count, volume_fraction)",
     "> 0",
     "Kilograms per second from start: particles are inserted while the mass inserted is below "
     "mass_rate (t - start), each with the mass of the particle drawn."},
    {"Insert", "count", GF_KEY_NUMBER, "(one of rate, mass_rate, count, volume_fraction)",
     "[1, 1e9]; a whole number", "Particles inserted at once, at start."},
    {"Insert", "volume_fraction", GF_KEY_NUMBER, "(one of rate, mass_rate, count, volume_fraction)",
     "(0, 1]",
     "Particles inserted at once, at start, until their volume is this share of the region's."},
    {"Insert", "start", GF_KEY_NUMBER, "0", ">= 0",
     "The time insertion begins (s); the first event is at the end of the step that reaches "
     "it."},
    {"Insert", "stop", GF_KEY_NUMBER, "(none)", "after start",
     "The time insertion ends (s): nothing is due after it; the first event at or after it "
     "still places what was due by then."},
    {"Insert", "max_count", GF_KEY_INTEGER, "0", "[0, 1e15]",
     "Insertion stops after this many particles in all (0: no limit)."},
    {"Insert", "every", GF_KEY_INTEGER, "1", "[1, 1e9]",
     "Steps between insertion events: each places what is due by then (a collective step on "
     "every rank: larger values cost less on many ranks)."},
    {"Physics", "gravity", GF_KEY_VECTOR, "< 0, 0, -9.81 >", "", "Gravity (m/s^2)."},
    {"Time", "dt", GF_KEY_NUMBER, NULL, "> 0", "The time step (s)."},
    {"Time", "steps", GF_KEY_INTEGER, "1000", "[0, 1e15]",
     "The step to run to (a restart continues up to it)."},
    {"Solver", "model", GF_KEY_WORD, "max_dissipation", "max_dissipation, coulomb, frictionless",
     "The contact model: the paper's maximum-dissipation impulse, solved analytically; the "
     "decoupled normal then tangential impulse projected onto the friction cone (pe's model); "
     "or no friction."},
    {"Solver", "mode", GF_KEY_WORD, "gauss_seidel", "gauss_seidel, jacobi",
     "jacobi makes every sweep a Jacobi sweep, so results do not depend on the decomposition (to "
     "rounding); it converges more slowly."},
    {"Solver", "max_iterations", GF_KEY_INTEGER, "200", "[1, 1e9]",
     "The most sweeps of a step's solve (restitution's two phases share them); the solves "
     "resumed after near pairs are added share as many more, then make one sweep each. Steps "
     "that end there without converging are counted and reported."},
    {"Solver", "tolerance", GF_KEY_NUMBER, "1e-5", "[0, 1]",
     "The stopping test: the velocities are estimated to be within tolerance times the largest "
     "contact speed of the step of the converged ones; 0: never stop early. The default keeps "
     "stacks of boxes standing (docs/physics.md, The stopping test of the solver)."},
    {"Solver", "sweeps", GF_KEY_INTEGER, "0", "[0, 1e9]",
     "> 0: exactly that many sweeps per step with no stopping test and no reductions (for "
     "benchmarks; max_iterations and tolerance unused)."},
    {"Solver", "check_every", GF_KEY_INTEGER, "1", "[1, 1e9]",
     "Sweeps between stopping tests (one global reduction of 5 numbers each)."},
    {"Solver", "relaxation", GF_KEY_NUMBER, "1", "[0.001, 1]",
     "The weight of the updates of contacts with another rank's particle where the colouring "
     "cannot separate them (of all updates in Jacobi mode)."},
    {"Solver", "over_relaxation", GF_KEY_NUMBER, "1", "[0.5, 1.9]",
     "omega of one-point blocks from the second Gauss-Seidel sweep of a step on (1: none): each "
     "new impulse moves on to lambda + omega (x - lambda), back into the friction cone. The same "
     "solution in fewer sweeps where Gauss-Seidel crawls (a dense sphere flow: about 1.45), but "
     "the stopping test's estimate is less sure (docs/physics.md, The stopping test of the "
     "solver); a step "
     "whose sweeps stop contracting falls back to 1."},
    {"Solver", "error_reduction", GF_KEY_NUMBER, "0.1", "[0, 1]",
     "The share of a penetration removed per step: penetrations close at error_reduction / dt."},
    {"Solver", "penetration_slop", GF_KEY_NUMBER, "1e-06", "[0, 0.1]",
     "Penetrations up to this share of the smaller body's radius are not pushed apart (deeper ones "
     "by what exceeds it). Rigid bodies wedged by friction cannot always separate every overlap "
     "at once; asked to, their impulses grow without bound and the solve never settles."},
    {"Solver", "warm_start", GF_KEY_BOOL, "true", "",
     "Start each step from the previous step's impulses of persisting contacts."},
    {"Solver", "manifolds", GF_KEY_WORD, "joint", "joint, pointwise",
     "joint: the points of one pair's contact manifold (a box face on a floor) are one block, "
     "solved together (a sliding box obeys Coulomb's law); pointwise: each point its own block, "
     "as before (its friction tilts where lever arms couple normal and tangent; much cheaper in "
     "dense piles of non-spherical bodies)."},
    {"Contact", "margin_fraction", GF_KEY_NUMBER, "0.01", "[0, 10]",
     "The speculative margin beyond the motion of one step, in radii of the largest particle "
     "present (lattice, inflow or restart alike)."},
    {"Contact", "per_pair", GF_KEY_BOOL, "true", "",
     "A pair of spheres (or a sphere and a wall or obstacle) within the margin is solved only when "
     "its gap can close within the step at the two bodies' velocities, plus margin_fraction "
     "radii; after the solve any other pair the solved velocities would close is added and the "
     "sweeps continue, so nothing penetrates unseen. false: every pair within the margin, which "
     "counts the fastest particle's speed for all pairs."},
    {"Contact", "sort_every", GF_KEY_INTEGER, "20", "[0, 1e9]",
     "Steps between sorts of the particles into the cell order in which contact detection lists "
     "contacts, so that detection reads the particle arrays nearly in memory order (the sweep "
     "keeps its speed without); 0: never."},
    {"Contact", "skin_fraction", GF_KEY_NUMBER, "1", "[0, 10]",
     "The skin of the candidate pair list, in radii of the largest particle: the list holds the "
     "pairs within the margin plus the skin and is searched again only when a particle has moved "
     "by more than half of the skin (or the margin has grown into it) or a new particle came. "
     "Results are the same with any skin, bit for bit; 0: a search every step."},
    {"Output", "progress_every", GF_KEY_INTEGER, "100", "[0, 1e15]",
     "Steps between progress lines; 0: none."},
    {"Output", "check_every", GF_KEY_INTEGER, "100", "[0, 1e15]",
     "Steps between global particle-count checks; 0: none."},
    {"Output", "directory", GF_KEY_STRING, "\"output\"", "",
     "The directory of the snapshots (made if missing)."},
    {"Output", "prefix", GF_KEY_STRING, "\"run\"", "",
     "The start of the snapshots' names, directory/prefix_000001000.h5, and of their lists for "
     "ParaView, directory/prefix.xmf (the bodies) and prefix_clumps.xmf, prefix_geometry.xmf, "
     "prefix_contacts.xmf."},
    {"Output", "snapshot_every", GF_KEY_INTEGER, "0", "[0, 1e15]",
     "Steps between snapshots; 0: none."},
    {"Output", "contacts", GF_KEY_BOOL, "false", "",
     "Snapshots hold the contacts too (for force chains)."},
    {"Output", "checkpoint_every", GF_KEY_INTEGER, "0", "[0, 1e15]",
     "Steps between checkpoints; a checkpoint is also written at the end of a run, on SIGUSR1 "
     "or SIGTERM and before wall_limit."},
    {"Output", "checkpoint", GF_KEY_STRING, "(directory/prefix.ckpt.h5)", "",
     "The checkpoint file."},
    {"Output", "wall_limit", GF_KEY_NUMBER, "0", "[0, 1e12]",
     "Wall time (s) before which the run writes a checkpoint and stops, for a resubmission; 0: "
     "none."},
    {"Statistics", "every", GF_KEY_INTEGER, "0", "[0, 1e15]",
     "Steps between rows of the statistics file; 0: off."},
    {"Statistics", "region_min", GF_KEY_VECTOR, "(Domain.min)", "",
     "The lower corner of the region of the solid volume fraction (m)."},
    {"Statistics", "region_max", GF_KEY_VECTOR, "(Domain.max)", "above region_min on every axis",
     "The upper corner of that region (m)."},
    {"Statistics", "file", GF_KEY_STRING, "(Output.directory/stats.csv)", "",
     "The statistics file (CSV)."},
    {"Forces", "every", GF_KEY_INTEGER, "100", "[0, 1e15]",
     "Steps between rows (each the average over those steps); 0: off."},
    {"Forces", "file", GF_KEY_STRING, "(Output.directory/forces.csv)", "",
     "The forces file (CSV)."},
    {"Forces", "torque_point", GF_KEY_VECTOR, "< 0, 0, 0 >", "",
     "Given: the torques about this point (m) too."},
    {"Tracks", "ids", GF_KEY_STRING, NULL, "at most 100000 ids",
     "The particle ids, separated by spaces or commas; a-b is every id from a to b."},
    {"Tracks", "every", GF_KEY_INTEGER, "10", "[0, 1e15]", "Steps between samples; 0: off."},
    {"Tracks", "file", GF_KEY_STRING, "(Output.directory/tracks.csv)", "",
     "The tracks file (CSV)."},
};

/* The keys a Stage (and a restart) may change besides the Solver block. */
#define STAGE_FREE_KEYS                                                                            \
    "Materials.friction", "Materials.restitution", "Materials.cohesion",                           \
        "Materials.rolling_friction", "Materials.twisting_friction",                               \
        "Materials.restitution_velocity", "Materials.Pair.friction", "Materials.Pair.restitution", \
        "Materials.Pair.cohesion", "Materials.Pair.rolling_friction",                              \
        "Materials.Pair.twisting_friction", "Physics.gravity", "Time.dt", "Insert.start",          \
        "Insert.stop", "Outlet.open"

/* What may differ on a restart: how long the run goes, what it writes and reports, the solver,
 * how the domain is cut into processes (a restart may use any rank count, with or without load
 * balancing), the stages and what they may change. A name without a dot is a whole block. The
 * restart's comparison of configurations, `granflow --help`, --help-config and the table of
 * docs/configuration.md all read this list. */
static const char *const restart_free[] = {
    "Time.steps", "Solver",       "Domain.processes", "Domain.balance_every",
    "Output",     "Statistics",   "Forces",           "Tracks",
    "Stage",      STAGE_FREE_KEYS};

/* What a Stage may change: the values a run can take up between two steps with its contact
 * history (contact laws, not the materials' densities; gravity; the time step; the solver;
 * inserts and outlets on or off). A restart may change them as well: the checkpoint's state
 * is the same under either. */
static const char *const stage_free[] = {"Solver", STAGE_FREE_KEYS};

/* Whether the first n characters of a list entry ("Materials.Pair") name the block path
 * ("Materials/Pair"). */
static int same_path(const char *entry, const char *path, size_t n) {
    for (size_t i = 0; i < n; ++i)
        if (entry[i] != path[i] && !(entry[i] == '.' && path[i] == '/'))
            return 0;
    return 1;
}

/* Whether a list names the block at `path` (or one it is in) as a whole. */
static int block_in(const char *const *list, size_t count, const char *path) {
    for (size_t i = 0; i < count; ++i) {
        size_t n = strlen(list[i]);
        if (!strchr(list[i], '.') && strncmp(path, list[i], n) == 0 &&
            (path[n] == '\0' || path[n] == '/'))
            return 1;
    }
    return 0;
}

/* Whether a list names key k of the block at `path`, or its block. */
static int key_in(const char *const *list, size_t count, const gf_config_key *k, const char *path) {
    size_t n = strlen(path);
    for (size_t i = 0; i < count; ++i)
        if (strlen(list[i]) > n && same_path(list[i], path, n) && list[i][n] == '.' &&
            strcmp(list[i] + n + 1, k->key) == 0)
            return 1;
    return block_in(list, count, path);
}

#define RESTART_FREE restart_free, sizeof restart_free / sizeof restart_free[0]
#define STAGE_FREE stage_free, sizeof stage_free / sizeof stage_free[0]

static int block_restart_free(const char *path) {
    return block_in(RESTART_FREE, path);
}

static int key_restart_free(const gf_config_key *k, const char *block) {
    return key_in(RESTART_FREE, k, block);
}

const gf_config_key *gf_config_schema_keys(size_t *n) {
    *n = sizeof keys / sizeof keys[0];
    return keys;
}

const gf_config_block_info *gf_config_schema_blocks(size_t *n) {
    *n = sizeof blocks / sizeof blocks[0];
    return blocks;
}

/* ------------------------------------------------------------------------------------------ */
/* Look-up                                                                                    */

int gf_config_schema_in_blocks(const gf_config_key *k, const char *path) {
    size_t n = strlen(path);
    for (const char *p = k->blocks; *p;) {
        size_t len = strcspn(p, " ");
        if (len == n && strncmp(p, path, n) == 0)
            return 1;
        p += len;
        p += strspn(p, " ");
    }
    return 0;
}

const gf_config_key *gf_config_schema_find(const char *path, const char *key) {
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; ++i)
        if (strcmp(keys[i].key, key) == 0 && gf_config_schema_in_blocks(&keys[i], path))
            return &keys[i];
    return NULL;
}

const gf_config_block_info *gf_config_schema_find_block(const char *path) {
    for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; ++i)
        if (strcmp(blocks[i].path, path) == 0)
            return &blocks[i];
    return NULL;
}

static int under(const char *path, const char *block) {
    size_t n = strlen(block);
    return strcmp(path, block) == 0 || (strncmp(path, block, n) == 0 && path[n] == '/');
}

const gf_config_key *gf_config_schema_find_dotted(const char *key, char *path, size_t size) {
    /* "Domain.Wall.normal" -> block path "Domain/Wall", key "normal". */
    snprintf(path, size, "%s", key);
    char *dot = strrchr(path, '.');
    if (!dot) {
        path[0] = '\0';
        return NULL;
    }
    *dot = '\0';
    for (char *p = path; *p; ++p)
        if (*p == '.')
            *p = '/';
    return gf_config_schema_find(path, dot + 1);
}

int gf_config_schema_restart_free(const char *key) {
    char path[256];
    const gf_config_key *k = gf_config_schema_find_dotted(key, path, sizeof path);
    if (path[0] && block_restart_free(path))
        return 1;
    return k && key_restart_free(k, path);
}

int gf_config_schema_stage_free(const char *key) {
    /* "Insert[feed].stop" -> "Insert.stop": the selectors name blocks, not keys */
    char plain[256], path[256];
    size_t n = 0;
    for (const char *c = key; *c && n + 1 < sizeof plain; ++c) {
        if (*c == '[') {
            c = strchr(c, ']');
            if (!c)
                return 0;
            continue;
        }
        plain[n++] = *c;
    }
    plain[n] = '\0';
    const gf_config_key *k = gf_config_schema_find_dotted(plain, path, sizeof path);
    return k && key_in(STAGE_FREE, k, path);
}

void gf_config_schema_restart_free_list(char *buf, size_t size) {
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof restart_free / sizeof restart_free[0] && n < size; ++i)
        n += (size_t)snprintf(buf + n, size - n, "%s%s%s", n ? ", " : "", restart_free[i],
                              strchr(restart_free[i], '.') ? "" : ".*");
}

const char *gf_config_schema_type_name(gf_key_type type) {
    switch (type) {
    case GF_KEY_NUMBER:
        return "number";
    case GF_KEY_INTEGER:
        return "integer";
    case GF_KEY_BOOL:
        return "bool";
    case GF_KEY_STRING:
        return "string";
    case GF_KEY_WORD:
        return "word";
    case GF_KEY_VECTOR:
        return "vector";
    case GF_KEY_QUATERNION:
        return "quaternion";
    }
    return "?";
}

const char *gf_config_schema_default_text(const gf_config_key *k) {
    return k->def ? k->def : "required";
}

/* The shortest form that reads back as x: 10 and 0.001 in full below 1e6, then 1e15, 1e-6
 * (an exponent without padding). */
static void compact_number(double x, char *buf, size_t size) {
    char raw[32]; /* a double takes at most 24 */
    int digits = 1;
    if (fabs(x) >= 1.0 && fabs(x) < 1e6)
        digits = (int)floor(log10(fabs(x))) + 1; /* no exponent for these */
    for (; digits <= 17; ++digits) {
        snprintf(raw, sizeof raw, "%.*g", digits, x);
        if (!isfinite(x) || strtod(raw, NULL) == x)
            break;
    }
    char *e = strchr(raw, 'e');
    if (!e) {
        snprintf(buf, size, "%s", raw);
        return;
    }
    const char *exp = e + 1;
    int negative = *exp == '-';
    if (*exp == '-' || *exp == '+')
        ++exp;
    while (*exp == '0' && exp[1])
        ++exp;
    *e = '\0';
    snprintf(buf, size, "%se%s%s", raw, negative ? "-" : "", exp);
}

void gf_config_schema_range_text(double lo, double hi, char *buf, size_t size) {
    char a[96], b[96];
    compact_number(lo, a, sizeof a);
    compact_number(hi, b, sizeof b);
    int positive = lo > 0.0 && lo <= 1e-300, unbounded = hi >= 1e300;
    if (positive && unbounded)
        snprintf(buf, size, "> 0");
    else if (positive)
        snprintf(buf, size, "(0, %s]", b);
    else if (unbounded)
        snprintf(buf, size, ">= %s", a);
    else
        snprintf(buf, size, "[%s, %s]", a, b);
}

/* ------------------------------------------------------------------------------------------ */
/* Checks of what the program reads                                                           */

static const char *access_name(gf_config_access_kind kind) {
    switch (kind) {
    case GF_CONFIG_ACCESS_DOUBLE:
        return "a number";
    case GF_CONFIG_ACCESS_LONG:
        return "an integer";
    case GF_CONFIG_ACCESS_BOOL:
        return "a bool";
    case GF_CONFIG_ACCESS_STRING:
        return "a string or word";
    case GF_CONFIG_ACCESS_VEC3:
        return "a vector";
    case GF_CONFIG_ACCESS_QUAT:
        return "a quaternion";
    default:
        return "?";
    }
}

static int type_fits(gf_config_access_kind kind, gf_key_type type) {
    switch (kind) {
    case GF_CONFIG_ACCESS_DOUBLE:
        return type == GF_KEY_NUMBER;
    case GF_CONFIG_ACCESS_LONG:
        return type == GF_KEY_INTEGER;
    case GF_CONFIG_ACCESS_BOOL:
        return type == GF_KEY_BOOL;
    case GF_CONFIG_ACCESS_STRING:
        return type == GF_KEY_STRING || type == GF_KEY_WORD;
    case GF_CONFIG_ACCESS_VEC3:
        return type == GF_KEY_VECTOR;
    case GF_CONFIG_ACCESS_QUAT:
        return type == GF_KEY_QUATERNION;
    default:
        return 0;
    }
}

/* The numbers of "1e-3" or "< 1, 0, 0 >": how many (at most max), or -1 if the text is not
 * exactly that. */
static int parse_numbers(const char *s, double *v, int max) {
    int vector = 0, n = 0;
    s += strspn(s, " ");
    if (*s == '<') {
        vector = 1;
        ++s;
    }
    for (;;) {
        char *end;
        if (n == max)
            return -1;
        v[n++] = strtod(s, &end);
        if (end == s)
            return -1;
        s = end + strspn(end, " ");
        if (vector && *s == ',') {
            ++s;
            continue;
        }
        break;
    }
    if (vector) {
        if (*s != '>')
            return -1;
        s += 1 + strspn(s + 1, " ");
    }
    return *s == '\0' && (vector || n == 1) ? n : -1;
}

/* Whether the registered literal default `reg` is the program's `prog` for a key of type t. */
static int same_default(gf_key_type t, const char *reg, const char *prog) {
    double a[4], b[4];
    switch (t) {
    case GF_KEY_NUMBER:
    case GF_KEY_INTEGER:
    case GF_KEY_VECTOR:
    case GF_KEY_QUATERNION: {
        int na = parse_numbers(reg, a, 4), nb = parse_numbers(prog, b, 4);
        if (na < 0 || na != nb)
            return 0;
        for (int i = 0; i < na; ++i)
            if (a[i] != b[i])
                return 0;
        return 1;
    }
    case GF_KEY_STRING: {
        size_t n = strlen(reg);
        return n >= 2 && reg[0] == '"' && reg[n - 1] == '"' && strlen(prog) == n - 2 &&
               strncmp(reg + 1, prog, n - 2) == 0;
    }
    case GF_KEY_BOOL:
    case GF_KEY_WORD:
        return strcmp(reg, prog) == 0;
    }
    return 0;
}

static int is_literal(const char *def) {
    return def && def[0] != '(';
}

gf_status gf_config_schema_check(const gf_config_access *a) {
    const char *path = a->path;
    if (a->kind == GF_CONFIG_ACCESS_BLOCK) {
        const gf_config_block_info *b = gf_config_schema_find_block(path);
        if (!b)
            return GF_ERROR(
                GF_ERR_STATE,
                "the program reads the block '%s', which src/config/config_schema.c does "
                "not register",
                path);
        if (a->index > 0 && !b->repeatable)
            return GF_ERROR(
                GF_ERR_STATE,
                "the program reads block '%s' number %zu, but src/config/config_schema.c "
                "registers it as not repeatable",
                path, a->index + 1);
        return GF_OK;
    }
    const gf_config_key *k = gf_config_schema_find(path, a->key);
    if (!k)
        return GF_ERROR(
            GF_ERR_STATE,
            "the program reads the key '%s' of block '%s', which src/config/config_schema.c "
            "does not register",
            a->key, path);
    if (a->kind == GF_CONFIG_ACCESS_HAS)
        return GF_OK;
    if (a->kind == GF_CONFIG_ACCESS_RANGE) {
        char want[128];
        gf_config_schema_range_text(a->lo, a->hi, want, sizeof want);
        size_t n = strlen(want);
        if (strncmp(k->range, want, n) != 0 || (k->range[n] != '\0' && k->range[n] != ';'))
            return GF_ERROR(GF_ERR_STATE,
                            "%s.%s: the program checks the range %s, src/config/config_schema.c "
                            "registers '%s'",
                            path, a->key, want, k->range);
        return GF_OK;
    }
    if (!type_fits(a->kind, k->type))
        return GF_ERROR(GF_ERR_STATE,
                        "%s.%s: the program reads %s, src/config/config_schema.c registers a %s",
                        path, a->key, access_name(a->kind), gf_config_schema_type_name(k->type));
    if (a->required) {
        if (is_literal(k->def))
            return GF_ERROR(
                GF_ERR_STATE,
                "%s.%s: the program requires it, src/config/config_schema.c registers the "
                "default %s",
                path, a->key, k->def);
        return GF_OK;
    }
    if (is_literal(k->def) && !same_default(k->type, k->def, a->def))
        return GF_ERROR(
            GF_ERR_STATE,
            "%s.%s: the program's default is %s, src/config/config_schema.c registers %s", path,
            a->key, a->def, k->def);
    if (!k->def && !a->given)
        return GF_ERROR(
            GF_ERR_STATE,
            "%s.%s: the program takes the default %s, src/config/config_schema.c registers "
            "it as required",
            path, a->key, a->def);
    return GF_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Help and Markdown                                                                          */

typedef struct {
    char *buf;
    size_t len, cap;
    int failed;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(text *t, const char *fmt, ...) {
    if (t->failed)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = t->cap ? vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap) : -2;
        va_end(ap);
        if (n == -1) {
            t->failed = 1;
            return;
        }
        if (n >= 0 && (size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = 2 * t->cap + (n > 0 ? (size_t)n : 0) + 4096;
        if (gf_grow((void **)&t->buf, cap, 1) != GF_OK) {
            t->failed = 1;
            return;
        }
        t->cap = cap;
    }
}

static gf_status finish(text *t, char **out) {
    if (t->failed) {
        free(t->buf);
        return GF_ERROR(GF_ERR_MEMORY, "could not format the configuration keys");
    }
    *out = t->buf;
    return GF_OK;
}

/* `s` in lines of at most `width` characters, each indented by `indent`. */
static void put_wrapped(text *t, const char *s, int indent, int width) {
    while (*s) {
        size_t len = strlen(s), cut = len;
        if (len > (size_t)(width - indent)) {
            cut = (size_t)(width - indent);
            while (cut > 0 && s[cut] != ' ')
                --cut;
            if (cut == 0)
                cut = strcspn(s, " ");
        }
        put(t, "%*s%.*s\n", indent, "", (int)cut, s);
        s += cut;
        s += strspn(s, " ");
    }
}

gf_status gf_config_schema_help(const char *block, char **out) {
    char want[256] = "";
    if (block) {
        /* Blocks may be named as on the command line too: Domain.Wall. */
        snprintf(want, sizeof want, "%s", block);
        for (char *p = want; *p; ++p)
            if (*p == '.')
                *p = '/';
        int found = 0;
        for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; ++i)
            found |= under(blocks[i].path, want);
        if (!found) {
            char known[1024];
            size_t n = 0;
            for (size_t i = 0; i < sizeof blocks / sizeof blocks[0] && n < sizeof known; ++i)
                n += (size_t)snprintf(known + n, sizeof known - n, " %s", blocks[i].path);
            return GF_ERROR(GF_ERR_INPUT, "--help-config: no block '%s'; the blocks are:%s", block,
                            known);
        }
    }
    text t = {0};
    if (!block)
        put(&t, "granflow's configuration: every block and key (configs/reference.cfg sets them "
                "all).\nA/B is block B inside block A, overridden on the command line as "
                "-A.B.key=value.\nA default in words is worked out from other keys.\n");
    for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; ++i) {
        const gf_config_block_info *b = &blocks[i];
        if (block && !under(b->path, want))
            continue;
        put(&t, "\n%s%s%s\n", b->path, b->repeatable ? " (repeatable)" : "",
            block_restart_free(b->path) ? " (may change at a restart)" : "");
        put_wrapped(&t, b->help, 4, 100);
        for (size_t j = 0; j < sizeof keys / sizeof keys[0]; ++j) {
            const gf_config_key *k = &keys[j];
            if (!gf_config_schema_in_blocks(k, b->path))
                continue;
            /* "default 1e-3", "default Domain.min x", "required", "required for box". */
            const char *def = gf_config_schema_default_text(k);
            int worded = def[0] == '(';
            int conditional = worded && (strncmp(def + 1, "required", 8) == 0 ||
                                         strncmp(def + 1, "with ", 5) == 0);
            put(&t, "  %s: %s; %s%.*s%s%s\n", k->key, gf_config_schema_type_name(k->type),
                k->def && !conditional ? "default " : "", (int)strlen(def) - 2 * worded,
                def + worded, k->range[0] ? (k->type == GF_KEY_WORD ? "; one of " : "; ") : "",
                k->range);
            put_wrapped(&t, k->help, 6, 100);
            if (key_restart_free(k, b->path) && !block_restart_free(b->path))
                put(&t, "      May change at a restart.\n");
        }
    }
    return finish(&t, out);
}

gf_status gf_config_schema_markdown(char **out) {
    text t = {0};
    put(&t,
        "%s\n\nBlocks (A/B is block B inside block A; repeatable ones may be given several "
        "times):\n\n",
        GF_CONFIG_SCHEMA_MARK_BEGIN);
    for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; ++i)
        put(&t, "- `%s`%s: %s%s\n", blocks[i].path, blocks[i].repeatable ? " (repeatable)" : "",
            blocks[i].help, block_restart_free(blocks[i].path) ? " May change at a restart." : "");
    put(&t, "\nKeys (defaults in parentheses are worked out from other keys):\n\n"
            "| block | key | type | default | range | meaning |\n|---|---|---|---|---|---|\n");
    for (size_t j = 0; j < sizeof keys / sizeof keys[0]; ++j) {
        const gf_config_key *k = &keys[j];
        put(&t, "| ");
        for (const char *p = k->blocks; *p;) {
            size_t len = strcspn(p, " ");
            put(&t, "%s`%.*s`", p == k->blocks ? "" : ", ", (int)len, p);
            p += len;
            p += strspn(p, " ");
        }
        /* Keys of a block that may change are said so at the block. */
        char first[256];
        snprintf(first, sizeof first, "%.*s", (int)strcspn(k->blocks, " "), k->blocks);
        const char *restart = key_restart_free(k, first) && !block_restart_free(first)
                                  ? " May change at a restart."
                                  : "";
        if (is_literal(k->def))
            put(&t, " | `%s` | %s | `%s` | %s | %s%s |\n", k->key,
                gf_config_schema_type_name(k->type), k->def, k->range, k->help, restart);
        else
            put(&t, " | `%s` | %s | %s | %s | %s%s |\n", k->key,
                gf_config_schema_type_name(k->type), gf_config_schema_default_text(k), k->range,
                k->help, restart);
    }
    put(&t, "%s\n", GF_CONFIG_SCHEMA_MARK_END);
    return finish(&t, out);
}
