// Package packaging holds no code: its folder has the release scripts
// (package.sh, install.sh), their templates and icons/, and its tests check
// the CPU archive that package.sh builds (see README "Install").
package packaging
