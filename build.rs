//! Links the `oino` binary with packed relative relocations (`DT_RELR`, glibc 2.36 and binutils
//! 2.38 or newer; older linkers warn and ignore it): half a megabyte fewer on disk, and less
//! for the loader to read at each start, which a short command like `oino run` pays every time.
//! A release build also leaves its symbols out (see below).

fn main() {
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if target_os == "linux" {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
        // `strip = true` is lost for a package with settings of its own (Cargo.toml gives oino
        // its codegen units): the linker leaves the symbols out of a release build instead.
        if std::env::var("PROFILE").as_deref() == Ok("release") {
            println!("cargo:rustc-link-arg-bins=-Wl,--strip-all");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
