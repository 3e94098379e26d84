// Tests, Plugins: placeholder replaced below.
