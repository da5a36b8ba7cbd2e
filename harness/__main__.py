from harness.app.main import main

main()
