//! The `byoc` command-line tool.

fn main() {
    println!("byoc");
}
